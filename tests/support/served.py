"""A real `vllm serve` of the bundled SmolLM2 for the openai backend's tests, a real
`transformers serve` of it (a second server, not vLLM), and a small stdlib proxy in front of
each that counts the answers it passes and injects faults (a 429 storm, a server that goes
away and comes back, unusable 200s, endpoints and fields hidden as a hosted API hides them):
the only double, and only for faults.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

#: the key the test server demands; no file a build writes may hold it
API_KEY = "sk-labeler-test-5f1d2c9e8a7b"
#: the name the server serves the bundled model by: labeler's alias, so --llm names both
SERVED_NAME = "smollm2-135m"


class VLLMServer:
    """`python -m vllm.entrypoints.openai.api_server` on 127.0.0.1, as the vllm backend runs
    the model on the CPU: float32, eager, whole prefills, a small KV cache, one thread."""

    def __init__(self, model_folder: Path, log: Path, *, port: int) -> None:
        self.port, self.log = port, log
        self.base_url = f"http://127.0.0.1:{port}/v1"
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1",
               "VLLM_LOGGING_LEVEL": "WARNING"}
        with open(log, "wb") as handle:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
                 "--model", str(model_folder), "--served-model-name", SERVED_NAME,
                 "--dtype", "float32", "--enforce-eager", "--max-model-len", "8192",
                 "--no-enable-chunked-prefill", "--max-num-batched-tokens", "8192",
                 "--max-num-seqs", "64", "--seed", "0", "--host", "127.0.0.1",
                 "--port", str(port), "--api-key", API_KEY, "--disable-uvicorn-access-log"],
                stdout=handle, stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, within: float = 900) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vllm serve exited: {self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5):
                    return
            except OSError:
                time.sleep(1)
        raise RuntimeError(f"vllm serve not ready in {within} s: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class TransformersServer(VLLMServer):
    """`transformers serve FOLDER` on 127.0.0.1: transformers' own OpenAI-compatible server,
    float32 on the CPU, pinned to the folder (it answers only to that name, and its
    /v1/models scans the Hub cache, not the pinned model)."""

    def __init__(self, model_folder: Path, log: Path, *, port: int) -> None:
        self.port, self.log = port, log
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.served_name = str(model_folder)  # the name it answers to
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        with open(log, "wb") as handle:
            self.process = subprocess.Popen(
                [str(Path(sys.executable).with_name("transformers")), "serve",
                 str(model_folder), "--host", "127.0.0.1", "--port", str(port), "--device",
                 "cpu", "--dtype", "float32", "--log-level", "warning"],
                stdout=handle, stderr=subprocess.STDOUT, env=env)


#: what each fault of `FaultProxy.fault` does to an answer it passes: a body cut short, a 200
#: holding an error object, one choice fewer than the n asked
FAULTS = {"truncated": lambda data: b'{"id": "x", "choices": [',
          "error": lambda data: b'{"error": {"message": "upstream overloaded", "code": 500}}',
          "fewer": lambda data: _fewer_choices(data)}
#: the header of the start-up probe's requests (labeler.llm.served.PROBE_HEADER)
PROBE = "X-Labeler-Probe"


class FaultProxy:
    """A proxy on 127.0.0.1 to `upstream` (host:port) that counts the POSTs it answered 200
    (by path; the start-up probe's are not counted) and injects faults: `storm(n,
    retry_after)` answers the next n POSTs 429, `outage(after)` drops every connection, as a
    killed server, from the `after`-th answered POST on until `restore()`, and `fault(kind)`
    spoils the next answer with a kind of FAULTS. Paths in `hidden` (e.g. "/version",
    "/v1/completions") are answered 404 and POSTs holding a field of `refused` (e.g.
    "prompt_logprobs") 400, as a server without them; a POST holding the text `too_long` is
    answered 400 as a prompt too long for the model (while `refusing`), and counted in
    `long_asked`. `delay` holds each POST that long before
    forwarding it (a slow server); `asked` is the sha256 of each answered POST's body,
    `in_flight` the POSTs being answered now, `spoiled` the faults sent."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.answered: dict[str, int] = {}
        self.refused: list[float] = []  # when each 429 went out
        self._storm, self._retry_after, self._down_after = 0, "0", None
        self.hidden: set[str] = set()
        self.refused_fields: set[str] = set()
        self.faults: list[str] = []
        self.spoiled: list[str] = []
        self.delay = 0.0
        self.asked: list[str] = []
        self.in_flight = 0
        self.too_long: str | None = None  # a POST holding this text: refused, if `refusing`
        self.refusing = True
        self.long_asked = 0  # the POSTs holding `too_long`, refused or not
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                proxy._forward(self, b"")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                proxy._forward(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def fault(self, *kinds: str) -> None:
        """Spoil the next answered POSTs, one kind of FAULTS each."""
        with self._lock:
            self.faults.extend(kinds)

    def storm(self, n: int, retry_after: str = "0") -> None:
        with self._lock:
            self._storm, self._retry_after = n, retry_after

    def outage(self, after: int) -> None:
        """Drop every connection once `after` POSTs have been answered, until `restore()`."""
        with self._lock:
            self._down_after = after

    def restore(self) -> None:
        with self._lock:
            self._down_after = None

    def total(self) -> int:
        return sum(self.answered.values())

    def down(self) -> bool:
        with self._lock:
            return self._down_after is not None and self.total() >= self._down_after

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        post = handler.command == "POST"
        if handler.path in self.hidden:
            return _reply(handler, 404, b'{"detail": "Not Found"}', {})
        if post and self.refused_fields & set(json.loads(body or b"{}")):
            return _reply(handler, 400, b'{"error": {"message": "unsupported field"}}', {})
        probe = handler.headers.get(PROBE) is not None
        post = post and not probe  # the probe's answers are not counted
        if post and self.too_long and self.too_long.encode() in body:
            with self._lock:
                self.long_asked += 1
            if self.refusing:
                return _reply(handler, 400, b'{"error": {"message": "This model\'s maximum '
                              b'context length is 8192 tokens, and the prompt is longer."}}', {})
        if post and self.down():
            handler.close_connection = True  # a killed server: the connection just ends
            return
        with self._lock:
            storm = post and self._storm > 0
            if storm:
                self._storm -= 1
                self.refused.append(time.monotonic())
        if storm:
            return _reply(handler, 429, b'{"error": {"message": "rate limited"}}',
                          {"Retry-After": self._retry_after})
        with self._lock:
            self.in_flight += post
        try:
            self._answer(handler, body, post)
        finally:
            with self._lock:
                self.in_flight -= post

    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes, post: bool) -> None:
        """Forward to the upstream server, count an answered POST and pass its answer back."""
        if post:
            time.sleep(self.delay)
        connection = http.client.HTTPConnection(self.upstream, timeout=600)
        headers = {k: v for k, v in handler.headers.items() if k.lower() != "host"}
        connection.request(handler.command, handler.path, body or None, headers)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        if post and self.down():  # went down while this one was being answered
            handler.close_connection = True
            return
        if post and response.status == 200:
            with self._lock:
                spoil = self.faults.pop(0) if self.faults else None
                if spoil:
                    self.spoiled.append(spoil)
                else:
                    self.answered[handler.path] = self.answered.get(handler.path, 0) + 1
                    self.asked.append(hashlib.sha256(body).hexdigest())
            if spoil:
                data = FAULTS[spoil](data)
        _reply(handler, response.status, data, {})


def _fewer_choices(data: bytes) -> bytes:
    answer = json.loads(data)
    answer["choices"] = answer["choices"][:-1]
    return json.dumps(answer).encode()


def _reply(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict) -> None:
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", **headers}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
