"""What a hostile or broken OpenAI-compatible server answers, read as one line and never as a
traceback or a label: a body not as its Content-Encoding says (retried, then one line), an
error that echoes the API key (the key blanked), a reply with null text (empty), and scores
that are no log-probabilities (NaN, infinite, positive) or do not cover the prompt (one line
naming the request). A stdlib server on 127.0.0.1 injects the faults (the only double); the
answers' parsing is read from the dicts a server sends."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from labeler.llm.models import resolve_model
from labeler.llm.openai_api import (
    UNKNOWN_WINDOW,
    OpenAIBackend,
    _prompt_scores,
    _text,
    _top_logprobs,
    _unusable,
)
from labeler.llm.served import Refusal, Server, ServerError

KEY = "sk-faults-7c3e9b1a"


class _Faults(BaseHTTPRequestHandler):
    """POST /v1/<fault>: the fault named by the path."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # a listing with an entry that is no object, a window as text
        listed = ["hosted-model", {"id": "hosted-model", "max_model_len": "8192"}]
        self._send(200 if self.path.endswith("/models") else 404,
                   json.dumps({"data": listed}).encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        fault = self.path.rsplit("/", 1)[-1]
        if fault == "bad-gzip":
            self._send(200, b"not gzip at all", ("Content-Encoding", "gzip"))
        elif fault == "echoed-key":
            said = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
            self._send(401, json.dumps(said).encode())
        elif fault == "completions":  # a hosted chat API's answer to the start-up probe
            self._send(200, json.dumps({"choices": [{"index": 0, "finish_reason": "length",
                "message": {"role": "assistant", "content": "Hi"}}]}).encode())
        elif fault == "by-body":  # too long at once; slow: answered after half a second
            too_long = b'{"error": {"message": "maximum context length is 8192 tokens"}}'
            if json.loads(body)["prompt"] == "slow":
                time.sleep(0.5)
                self._send(200, b'{"choices": [{"index": 0, "text": "kept"}]}')
            else:
                self._send(400, too_long)
        elif fault == "spent-quota":
            self._send(429, b'{"error": "quota"}', ("Retry-After", "1000000000"))

    def _send(self, status: int, data: bytes, header: tuple = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if header:
            self.send_header(*header)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Faults)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    client = Server(f"http://127.0.0.1:{httpd.server_address[1]}/v1", KEY, concurrency=2)
    yield client
    client.close()
    httpd.shutdown()
    httpd.server_close()


def test_a_body_not_as_encoded_is_retried_then_one_line(server, monkeypatch):
    monkeypatch.setenv("LABELER_SERVER_BACKOFF", "0.001")
    with pytest.raises(ServerError) as raised:
        server.post("/bad-gzip", {"model": "m"}, "generate 1 of 1")
    assert "no usable answer to generate 1 of 1 after 10 tries" in str(raised.value)
    assert "decompressing" in str(raised.value)


def test_a_retry_after_longer_than_a_build_waits_stops_at_once(server):
    started = time.monotonic()
    with pytest.raises(ServerError) as raised:
        server.post("/spent-quota", {"model": "m"}, "generate 2 of 3")
    assert time.monotonic() - started < 30
    assert "generate 2 of 3 answered 429: quota, asking to wait 1000000000 s" in str(raised.value)


def test_a_refusal_keeps_the_answers_already_in_flight(server):
    """A prompt refused as too long stops the call, but the request in flight beside it is
    answered first (the call cache commits it: a hosted API's answer is paid for)."""
    answers = []
    with pytest.raises(Refusal) as raised:
        for i, answer in server.post_all("/by-body", [{"prompt": "slow"}, {"prompt": "long"}],
                                         "generate"):
            answers.append((i, answer["choices"][0]["text"]))
    assert raised.value.status == 400 and "generate 2 of 2" in str(raised.value)
    assert answers == [(0, "kept")]


def test_an_error_that_echoes_the_key_is_reported_without_it(server):
    with pytest.raises(Refusal) as raised:
        server.post("/echoed-key", {"model": "m"})
    assert raised.value.status == 401
    assert KEY not in str(raised.value) and KEY not in raised.value.message
    assert "Incorrect API key provided: ***" in str(raised.value)


def test_a_reply_with_null_text_is_empty():
    assert _text({"text": None}) == ""
    assert _text({"message": {"role": "assistant", "content": None}}) == ""
    assert _text({"message": {"content": "Paris"}}) == "Paris"


def unscored(choice: dict, ids: list[int], way: str) -> str | None:
    """Why `_prompt_scores` finds the answer scores no prompt; None where it does."""
    try:
        _prompt_scores(choice, ids, way)
    except ValueError as why:
        return str(why)
    return None


@pytest.mark.parametrize("value", [float("nan"), float("-inf"), float("inf"), 3.5, None, "x"])
def test_a_score_that_is_no_log_probability_is_named(value):
    ids = [7, 8, 9]
    vllm = {"prompt_logprobs": [None, {"8": {"logprob": -1.0}}, {"9": {"logprob": value}}]}
    echo = {"logprobs": {"token_logprobs": [None, -1.0, value]}}
    assert unscored(vllm, ids, "prompt_logprobs") == f"a log-probability of {value!r}"
    assert unscored(echo, ids, "echo") == f"a log-probability of {value!r}"
    assert _unusable([-0.5, value]) == f"a log-probability of {value!r}"


def test_scores_that_do_not_cover_the_prompt_are_named():
    ids = [7, 8, 9]
    assert unscored({"prompt_logprobs": [None, {"999": {"logprob": -1}}]}, ids,
                    "prompt_logprobs") == "no prompt_logprobs of the prompt's tokens"
    assert unscored({"logprobs": {"token_logprobs": [None, -1.0]}}, ids, "echo") == \
        "echo of 2 of the prompt's 3 tokens"
    assert unscored({"logprobs": None}, ids, "echo") == "no echo of the prompt's tokens"
    assert _prompt_scores({"prompt_logprobs": [None, {"8": {"logprob": -1.0}},
                                               {"9": {"logprob": -0.0}}]}, ids,
                          "prompt_logprobs") == [None, -1.0, -0.0]


def test_an_echoed_answer_is_read_from_its_token_logprobs_whatever_else_it_holds():
    """vLLM's echoed answer holds prompt_logprobs too: the echo way reads token_logprobs,
    as another server gives them (here they differ, so reading the other would show)."""
    ids = [7, 8, 9]
    answer = {"prompt_logprobs": [None, {"8": {"logprob": -5.0}}, {"9": {"logprob": -5.0}}],
              "logprobs": {"token_logprobs": [None, -1.0, -2.0, -0.5]}}
    assert _prompt_scores(answer, ids, "echo") == [None, -1.0, -2.0]
    assert _prompt_scores(answer, ids, "prompt_logprobs") == [None, -5.0, -5.0]


def test_top_logprobs_entries_without_a_token_or_logprob_are_caught():
    answer = {"choices": [{"logprobs": {"content": [{"top_logprobs": [
        {"token": " yes", "logprob": -0.2}, {"logprob": -1.0}, "junk", {"token": " no"}]}]}}]}
    top = _top_logprobs(answer)
    assert top == {" yes": -0.2, " no": None}
    assert _unusable(list(top.values())) == "a log-probability of None"


def test_two_hosted_servers_of_one_model_name_share_no_cache_entry(server, monkeypatch):
    """No /version, no tokenizer here: the URL tells the two apart; the API key keys nothing.
    Their listing holds an entry that is no object and a window as text: both ignored."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    spec = resolve_model("acme/hosted-model")
    first = OpenAIBackend(spec, base_url=server.base_url, concurrency=1)
    other = OpenAIBackend(spec, base_url=server.base_url.replace("127.0.0.1", "localhost"),
                          concurrency=1)
    assert first.tokenizer is None and first.version is None
    assert first.max_context == UNKNOWN_WINDOW  # the listing's "8192" is no window
    assert first.key() != other.key()
    assert KEY not in json.dumps([first.key(), other.key()])
