"""The HTTP side of a served model: one OpenAI-compatible server, many requests in flight.

httpx (already a dependency through huggingface_hub) with a thread pool: `post_all` sends
every body at once, at most `concurrency` in flight, and yields each answer as it arrives.
A 429, a 5xx, a timeout or a refused connection (a server restarting) is retried with
exponential backoff, waiting what the server's `Retry-After` says where it says it; so is a
200 whose body is no usable answer (malformed, truncated or empty JSON, an error object, no
`choices` or fewer than the `n` asked), and a reply over `MAX_REPLY` bytes or not whole within
`DEADLINE` seconds (the per-read `TIMEOUT` alone lets a reply trickle for ever). A prompt the
server refuses as too long for the model fails that request alone (`Refusal.too_long`): the
others are answered, then it is raised. Any other refusal, or the last try's failure, is one
error line naming the server and the request. Requests go out no faster than `Limits` allow,
and each answer's `usage` is added up (`Usage`). The API key travels only in the
Authorization header: no message here holds it.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, replace

from labeler import settings
from labeler.errors import LabelerError, ModelLoadError
from labeler.lazy import LazyModule
from labeler.llm.served_limits import Limits, Usage

httpx = LazyModule("httpx")  # imported when a client starts: naming the backend stays cheap

#: statuses worth another try: rate limited, or the server failing or restarting
RETRIED = frozenset({408, 425, 429, 500, 502, 503, 504})
#: tries per request before the build stops (a restart of a large model takes minutes)
ATTEMPTS = 10
#: the longest wait between two tries, in seconds (Retry-After is honoured up to this)
MAX_WAIT = 60.0
#: what reaches no answer in this many seconds is retried (a long generation on a busy server)
TIMEOUT = 600.0
#: a reply not whole this many seconds after it was sent is retried (checked at each chunk)
DEADLINE = 2 * TIMEOUT
#: the most bytes of a reply read (a prompt's log-probabilities over a 128k-token window are
#: about 20 MB); a bigger one is retried
MAX_REPLY = 64 * 2**20
#: what a refusal of the start-up probe means
REFUSED = {401: "the server refused the API key (401 Unauthorized)",
           403: "the API key may not use this server (403 Forbidden)"}
#: the header marking the start-up probe's requests (a proxy or a log can tell them apart)
PROBE_HEADER = "X-Labeler-Probe"
#: how servers say a prompt does not fit the model's window (vLLM, OpenAI, Anthropic, Mistral,
#: llama.cpp, Gemini); a refusal naming only a maximum or tokens may be of a parameter every
#: request holds (max_tokens), which leaving the query out would hide
TOO_LONG_SAYS = ("context length", "context window", "context size", "maximum context",
                 "too long", "maximum model length", "input token count")


@dataclass
class ServerError(LabelerError):
    """The server refused a request, or could not be reached after every retry."""

    url: str
    reason: str
    hint: str = ""

    def __str__(self) -> str:
        return f"{self.url}: {self.reason}"


@dataclass
class Refusal(ServerError):
    """The server refused a request outright (a status not retried): its status and its own
    message, so that a caller may tell a prompt too long for the model from other refusals."""

    status: int = 0
    message: str = ""
    indices: tuple[int, ...] = ()  # post_all: every request of the call refused as too long

    @property
    def too_long(self) -> bool:
        """Whether the server says the prompt does not fit the model's context window."""
        said = self.message.lower()
        return self.status in (400, 413, 422) and any(words in said for words in TOO_LONG_SAYS)


class _Cut(Exception):
    """A reply over `Server.max_reply` bytes or past `Server.deadline`: retried."""


class Server:
    """An OpenAI-compatible API at `base_url` (…/v1), `concurrency` requests in flight."""

    def __init__(self, base_url: str, api_key: str | None, *, concurrency: int,
                 limits: Limits | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.concurrency = concurrency
        self.limits = limits or Limits()
        self.usage = Usage()
        self._key = api_key  # only to blank it out of the server's own messages
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(headers=headers, timeout=TIMEOUT, limits=httpx.Limits(
            max_connections=concurrency, max_keepalive_connections=concurrency))
        self.pool = ThreadPoolExecutor(concurrency, thread_name_prefix="labeler-openai")
        self.sent = 0  # requests answered, this process
        self.max_reply, self.deadline = MAX_REPLY, DEADLINE
        self._lock = threading.Lock()

    def models(self, model: str) -> list[dict] | str:
        """The served models (GET /models), or why the server lists none (a server that
        lists no models may still serve one). A server that cannot be reached, or refuses
        the key, fails here as one line naming `model`: the first request at start-up."""
        try:
            response = self.client.get(f"{self.base_url}/models", timeout=30)
        except httpx.HTTPError as error:
            raise ModelLoadError(model, f"cannot reach the server at {self.base_url}: "
                                 f"{_said(error)}", hint="start the server, or check "
                                 "--base-url / OPENAI_BASE_URL") from None
        if response.status_code in (401, 403):
            raise ModelLoadError(model, f"{self.base_url}: {REFUSED[response.status_code]}",
                                 hint="set OPENAI_API_KEY to the server's key")
        if response.status_code != 200:
            said = self.blanked(_message(response.content, response.reason_phrase))
            return f"GET /models answered {response.status_code}: {said}"
        try:
            listed = response.json().get("data")
        except (ValueError, AttributeError):
            return "GET /models answered no JSON list"
        if not isinstance(listed, list):
            return "GET /models answered no list"
        return [m for m in listed if isinstance(m, dict)]  # an entry that is no object: none

    def try_post(self, path: str, body: dict) -> tuple[int, dict | None]:
        """One POST, not retried, its answer not counted: the probe's (status, JSON body or
        None); status 0 where the server could not be reached."""
        try:
            response = self.client.post(f"{self.base_url}{path}", json=body, timeout=120,
                                        headers={PROBE_HEADER: "1"})
        except httpx.HTTPError:
            return 0, None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        return response.status_code, answer if isinstance(answer, dict) else None

    def version(self) -> str | None:
        """The server's reported version (vLLM's GET /version at the server's root), or
        None where it reports none."""
        root = self.base_url.removesuffix("/v1")
        try:
            response = self.client.get(f"{root}/version", timeout=30)
            return str(response.json()["version"]) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return None

    def post_all(self, path: str, bodies: list[dict], what: str = "request"
                 ) -> Iterator[tuple[int, dict]]:
        """(index, answer) for each body POSTed to `path`, as each arrives; at most
        `concurrency` in flight. A prompt refused as too long is raised once every other body
        is answered, as a `Refusal` listing every such body (`indices`); any other failure
        stops the rest and is raised, naming the request as `what` and its number, once the
        answers already in flight are yielded (`_kept`)."""
        pending, started, too_long = {}, iter(enumerate(bodies)), []
        try:
            while True:
                for i, body in started:
                    pending[self.pool.submit(self.post, path, body,
                                             f"{what} {i + 1} of {len(bodies)}")] = i
                    if len(pending) >= self.concurrency:
                        break
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                failed = [future for future in done if future.exception() is not None]
                for future in done - set(failed):
                    yield pending.pop(future), future.result()
                too_long += [(pending.pop(f), f.exception()) for f in failed
                             if getattr(f.exception(), "too_long", False)]
                if failed := [f for f in failed if f in pending]:
                    yield from self._kept(pending)
                    raise failed[0].exception()
        finally:
            for future in pending:
                future.cancel()
        if too_long:
            too_long.sort(key=lambda pair: pair[0])
            raise replace(too_long[0][1], indices=tuple(i for i, _ in too_long))

    @staticmethod
    def _kept(pending: dict) -> Iterator[tuple[int, dict]]:
        """After a failure: the requests not yet sent are dropped, and each answer of those in
        flight is yielded as it arrives (it may be paid for; the call cache commits it)."""
        for future in list(pending):
            if future.cancel():
                pending.pop(future)
        for future in as_completed(list(pending)):
            i = pending.pop(future)
            if future.exception() is None:
                yield i, future.result()

    def post(self, path: str, body: dict, what: str = "a request") -> dict:
        """One POST's answer, retried on 429, 5xx, timeouts, refused connections and a 200
        that holds no usable answer (`unusable`); a refusal is a `Refusal` naming `what`."""
        url = f"{self.base_url}{path}"
        for attempt in range(1, ATTEMPTS + 1):
            wait_for = None
            self.limits.wait()
            try:
                response, data = self._read(url, body)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError,
                    httpx.DecodingError) as error:  # DecodingError: a body not as encoded
                reason = _said(error)
            except _Cut as cut:
                reason = str(cut)
            else:
                if response.status_code == 200:
                    answer, reason = _answer(data, body.get("n", 1))
                    reason = self.blanked(reason)
                    if answer is not None:
                        with self._lock:
                            self.sent += 1
                        self.limits.spent(self.usage.add(answer.get("usage")))
                        return answer
                else:
                    message = self.blanked(_message(data, response.reason_phrase))
                    reason = f"{response.status_code}: {message}"
                    if response.status_code not in RETRIED:
                        raise Refusal(url, f"refused {what} ({reason})",
                                      status=response.status_code, message=message)
                    wait_for = _retry_after(response)
                    if wait_for is not None and wait_for > MAX_WAIT * ATTEMPTS:
                        raise ServerError(url, f"{what} answered {reason}, asking to wait "
                                          f"{wait_for:.0f} s (Retry-After): longer than a "
                                          "build waits", hint="run it again when the server "
                                          "takes requests (a spent quota?)")
            if attempt == ATTEMPTS:
                break
            time.sleep(min(MAX_WAIT, wait_for) if wait_for is not None else _backoff(attempt))
        raise ServerError(url, f"no usable answer to {what} after {ATTEMPTS} tries "
                          f"(last: {reason})",
                          hint="the build resumes where it stopped: run it again")

    def _read(self, url: str, body: dict) -> tuple[httpx.Response, bytes]:
        """One POST's response and its whole body; `_Cut` where the body passes `max_reply`
        bytes (decoded) or is not whole `deadline` seconds after the request went."""
        ends = time.monotonic() + self.deadline
        with self.client.stream("POST", url, json=body) as response:
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > self.max_reply:
                    raise _Cut(f"a reply over {self.max_reply:,} bytes")
                if time.monotonic() > ends:
                    raise _Cut(f"a reply not whole within {self.deadline:g} s")
                chunks.append(chunk)
        return response, b"".join(chunks)

    def blanked(self, said: str) -> str:
        """The server's words without the API key (a server may echo it in an error)."""
        return said.replace(self._key, "***") if self._key else said

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()


def _answer(data: bytes, n: int) -> tuple[dict | None, str]:
    """A 200's answer from its body, or None and why it is no usable answer (retried as a
    5xx is)."""
    try:
        answer = json.loads(data)
    except ValueError:
        return None, f"200 with a malformed body ({len(data)} bytes)"
    if not isinstance(answer, dict):
        return None, "200 with a body that is no JSON object"
    if answer.get("error"):
        error = answer["error"]
        said = error.get("message", error) if isinstance(error, dict) else error
        return None, f"200 with an error: {' '.join(str(said).split())[:300]}"
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or \
            not all(isinstance(c, dict) for c in choices):
        return None, "200 without choices"
    if len(choices) < n:
        return None, f"200 with {len(choices)} choices of the {n} asked"
    return answer, ""


def _backoff(attempt: int) -> float:
    """Seconds before try `attempt + 1`: doubling from settings.server_backoff(), jittered."""
    return min(MAX_WAIT, settings.server_backoff() * 2 ** (attempt - 1)) * random.uniform(0.5, 1)


def _retry_after(response: httpx.Response) -> float | None:
    """The server's Retry-After in seconds (a number of seconds; a date is not honoured);
    `post` waits at most MAX_WAIT of it."""
    try:
        return max(0.0, float(response.headers["retry-after"]))
    except (KeyError, ValueError):
        return None


def _message(data: bytes, phrase: str) -> str:
    """The server's own error message in a body `data`, on one line; else the status's
    `phrase`."""
    try:
        error = json.loads(data)
        text = error.get("error", error) if isinstance(error, dict) else error
        text = text.get("message", text) if isinstance(text, dict) else text
    except ValueError:
        text = data.decode("utf-8", "replace")
    return " ".join(str(text).split())[:300] or phrase


def _said(error: Exception) -> str:
    return " ".join(str(error).split()) or type(error).__name__
