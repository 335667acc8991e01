"""What a hostile or broken OpenAI-compatible server answers, read as one line and never as a
traceback or a label: a body not as its Content-Encoding says (retried, then one line), an
error that echoes the API key (the key blanked), a reply with null text (empty), and scores
that are no log-probabilities (NaN, infinite, positive) or do not cover the prompt (one line
naming the request), a reply over the size cap or trickling past the whole-reply deadline
(retried, then one line), a prompt refused as too long (that request alone fails, and is not
sent again), and the request-rate and token-rate limits (on the limiter's own clock, not
the wall's). A stdlib server on 127.0.0.1 injects the faults (the only double); the
answers' parsing is read from the dicts a server sends."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner
from support.nq2 import cut_run

from labeler.cli import cli
from labeler.errors import InputError, PromptRefusedError
from labeler.llm.base import Sampling, chat
from labeler.llm.models import resolve_model
from labeler.llm.openai_api import (
    UNKNOWN_WINDOW,
    OpenAIBackend,
    _prompt_scores,
    _text,
    _top_logprobs,
    _unusable,
)
from labeler.llm.served import PROBE_HEADER, Refusal, Server, ServerError

KEY = "sk-faults-7c3e9b1a"


class _Faults(BaseHTTPRequestHandler):
    """POST /v1/<fault>: the fault named by the path."""

    protocol_version = "HTTP/1.1"
    posts = 0  # POSTs answered, all tests together
    refusing = False  # every POST but the probe's refused as a bad request

    def log_message(self, *args) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionResetError:  # a client that cut a reply short (its caps)
            pass

    def do_GET(self) -> None:  # a listing with an entry that is no object, a window as text
        listed = ["hosted-model", {"id": "hosted-model", "max_model_len": "8192"}]
        self._send(200 if self.path.endswith("/models") else 404,
                   json.dumps({"data": listed}).encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        fault = self.path.rsplit("/", 1)[-1]
        type(self).posts += 1
        if fault == "bad-gzip":
            self._send(200, b"not gzip at all", ("Content-Encoding", "gzip"))
        elif fault == "echoed-key":
            said = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
            self._send(401, json.dumps(said).encode())
        elif fault == "huge":  # a whole answer, but 100 kB of it
            self._send(200, json.dumps({"choices": [{"index": 0, "text": "x" * 100_000}]})
                       .encode())
        elif fault == "trickle":  # each byte well within the per-read timeout; all in 2 s
            self._send(200, json.dumps({"choices": [{"index": 0, "text": "x" * 180}]})
                       .encode(), pause=0.01)
        elif self.refusing and not self.headers.get(PROBE_HEADER):
            self._send(400, b'{"error": {"message": "unsupported value"}}')
        elif "/all-too-long/" in self.path and not self.headers.get(PROBE_HEADER):
            self._send(400, b'{"error": {"message": "This model\'s maximum context length is '
                            b'8 tokens."}}')  # every prompt of a build; the probe answered
        elif fault == "completions" and b"TOO LONG" in body:  # the chat too long for the model
            self._send(400, b'{"error": {"message": "This model\'s maximum context length is '
                            b'8192 tokens. However, you requested 9000 tokens."}}')
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

    def _send(self, status: int, data: bytes, header: tuple = (), pause: float = 0) -> None:
        """`data` at once, or a byte every `pause` seconds (until the client hangs up)."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if header:
            self.send_header(*header)
        self.end_headers()
        try:
            for at in range(0, len(data), 1 if pause else len(data) or 1):
                self.wfile.write(data[at:at + 1] if pause else data)
                self.wfile.flush()
                time.sleep(pause)
        except OSError:  # the client cut the reply
            self.close_connection = True


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


def test_a_prompt_refused_as_too_long_fails_alone(server):
    """The requests beside and after a prompt refused as too long are answered (the call
    cache commits them: a hosted API's answer is paid for), then the refusal is raised,
    listing every request refused so."""
    answers = []
    bodies = [{"prompt": "long"}, {"prompt": "slow"}, {"prompt": "slow"}, {"prompt": "long"}]
    with pytest.raises(Refusal) as raised:
        for i, answer in server.post_all("/by-body", bodies, "generate"):
            answers.append((i, answer["choices"][0]["text"]))
    assert raised.value.too_long and raised.value.indices == (0, 3)
    assert "generate 1 of 4" in str(raised.value)
    assert sorted(answers) == [(1, "kept"), (2, "kept")]


@pytest.mark.parametrize("fault, limit, value, last", [
    ("huge", "max_reply", 10_000, "a reply over 10,000 bytes"),
    ("trickle", "deadline", 0.2, "a reply not whole within 0.2 s")])
def test_a_reply_too_big_or_too_slow_is_retried_then_one_line(server, monkeypatch, fault,
                                                               limit, value, last):
    """100 kB over a cap of 10 kB; a byte every 10 ms (each read well within its timeout)
    past a whole-reply deadline of 0.2 s."""
    monkeypatch.setenv("LABELER_SERVER_BACKOFF", "0.001")
    monkeypatch.setattr(server, limit, value)
    with pytest.raises(ServerError) as raised:
        server.post(f"/{fault}", {"model": "m"}, "generate 3 of 5")
    assert str(raised.value) == (f"{server.base_url}/{fault}: no usable answer to generate 3 "
                                 f"of 5 after 10 tries (last: {last})")


def test_the_same_replies_within_the_default_caps_are_read(server):
    assert len(server.post("/huge", {"model": "m"})["choices"][0]["text"]) == 100_000
    assert server.post("/trickle", {"model": "m"})["choices"][0]["text"] == "x" * 180


def test_a_prompt_the_server_refuses_as_too_long_is_not_sent_again(server, monkeypatch):
    """A hosted model (no tokenizer here: the server checks lengths): the call's other prompts
    are answered, then one line; asked again in this process, the prompt is not sent."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    backend = OpenAIBackend(resolve_model("acme/hosted-model"), base_url=server.base_url,
                            concurrency=2)
    prompts = [chat("short"), chat("TOO LONG"), chat("short too")]
    answered = []
    with pytest.raises(PromptRefusedError) as raised:
        for i, _ in backend.stream(backend.prepare(prompts), Sampling(max_tokens=4)):
            answered.append(i)
    assert sorted(answered) == [0, 2]
    assert str(raised.value).startswith(
        f"field 'prompt': {server.base_url}/chat/completions refused 1 of 3 generate prompts "
        "as too long for the model: This model's maximum context length is 8192 tokens.")
    before = _Faults.posts
    with pytest.raises(PromptRefusedError):
        backend.generate([chat("TOO LONG")], Sampling(max_tokens=4))
    assert _Faults.posts == before


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


def unscored(choice: dict, ids: list[int], way: str, usage=None) -> str | None:
    """Why `_prompt_scores` finds the answer scores no prompt; None where it does."""
    try:
        _prompt_scores(choice, ids, way, usage)
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


def test_an_echo_of_other_tokens_than_the_prompt_sent_is_named_not_read_shifted():
    """The echo way reads token_logprobs by position, so the echoed tokens must be the ids
    sent: a server that adds a BOS token before them, or re-tokenizes their text into fewer
    tokens, shifts every position (the continuation scored by its neighbours' values). Such
    an answer is one line, by its length (the prompt plus at most the one generated token) or
    the prompt tokens its usage counts; a first token's null, as OpenAI's echo has, is read."""
    ids = [7, 8, 9]
    bos = {"logprobs": {"token_logprobs": [None, -9.0, -1.0, -2.0, -0.5]}}
    assert unscored(bos, ids, "echo") == "echo of 5 tokens for the prompt's 3 and one more"
    fewer = {"logprobs": {"token_logprobs": [None, -1.5, -0.5]}}  # 2 prompt tokens, 1 answer
    assert unscored(fewer, ids, "echo", {"prompt_tokens": 2, "completion_tokens": 1}) == \
        "the server counted 2 prompt tokens of the prompt's 3"
    assert unscored(bos, ids, "echo", {"prompt_tokens": 4}) is not None
    exact = {"logprobs": {"token_logprobs": [None, -1.0, -2.0, -0.5]}}
    assert _prompt_scores(exact, ids, "echo", {"prompt_tokens": 3}) == [None, -1.0, -2.0]
    assert _prompt_scores(exact, ids, "echo", {"prompt_tokens": "3"}) == [None, -1.0, -2.0]
    assert _prompt_scores({"logprobs": {"token_logprobs": [-3.0, -1.0, -2.0]}}, ids,
                          "echo") == [None, -1.0, -2.0]
    vllm = {"prompt_logprobs": [None, {"8": {"logprob": -1.0}}, {"9": {"logprob": -2.0}}]}
    assert unscored(vllm, ids, "prompt_logprobs", {"prompt_tokens": 4}) == \
        "the server counted 4 prompt tokens of the prompt's 3"


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


@pytest.mark.parametrize("status, said", [
    (400, ("This model's maximum context length is 8192 tokens. However, you requested 9000 "
          "tokens (8992 in the messages, 8 in the completion).")),  # vLLM, OpenAI
    (400, ("The decoder prompt (length 9000) is longer than the maximum model length of 8192. "
          "Make sure that `max_model_len` is no smaller than the number of text tokens.")),
    (400, "prompt is too long: 210000 tokens > 200000 maximum"),  # Anthropic's
    (400, "the request exceeds the available context size, try increasing it"),  # llama.cpp
    (400, ("Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 "
          "maximum context length")),  # Mistral
    (400, ("The input token count (1048600) exceeds the maximum number of tokens allowed "
          "(1048576).")),  # Gemini's
    (413, "Request too long: the context window is 8192 tokens")])
def test_a_refusal_saying_the_prompt_does_not_fit_is_too_long(status, said):
    assert Refusal("u", "r", status=status, message=said).too_long


@pytest.mark.parametrize("status, said", [
    (400, ("max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens "
          "for hosted-model")),  # a parameter every request holds, not the prompt
    (400, "Unrecognized request argument supplied: context"),
    (400, ("Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but "
          "got 25 instead.")),
    (422, "Input should be less than or equal to 8192 for max_tokens (the maximum)"),
    (500, "This model's maximum context length is 8192 tokens.")])  # retried, not refused
def test_a_refusal_of_a_parameter_is_not_too_long(status, said):
    """A refusal that every request of a build meets (a bad parameter) read as a prompt too
    long would leave every query out as if it were the prompt's fault."""
    assert not Refusal("u", "r", status=status, message=said).too_long


def test_a_build_whose_every_prompt_the_server_refuses_as_too_long_fails(server, tmp_path,
                                                                          monkeypatch):
    """Not a version of no records (which `validate` rejects) reported as built: one line,
    and nothing written, not even a partial version that a rerun would resume with every
    query left out, asking nothing."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    before = _Faults.posts
    result = CliRunner().invoke(cli, [
        "build", "--dataset", "nq-sample", "--limit", "2", "--k", "2", "--llm",
        "acme/hosted-model", "--backend", "openai", "--prompt-format", "chat", "--base-url",
        f"{server.base_url}/all-too-long", "--max-new-tokens", "8", "--run",
        str(cut_run(tmp_path)), "--cache-dir", str(tmp_path / "calls"), "--out",
        str(tmp_path / "out")])
    assert isinstance(result.exception, InputError), result.output
    assert _Faults.posts > before
    assert str(result.exception).startswith(
        "hosted-model: each of the 2 queries left out, the server refusing a prompt of each "
        f"as too long: field 'prompt': {server.base_url}/all-too-long/chat/completions "
        "refused ")
    assert not [path for path in (tmp_path / "out").rglob("*") if path.is_file()]


def test_a_resumed_build_keeps_no_stale_record_of_a_query_left_out(server, tmp_path,
                                                                    monkeypatch):
    """A build killed after recording a shard's query left out but before writing the shard
    labels that shard again on resume: where the query is answered this time, the manifest
    does not still list it as left out."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    command = ["build", "--dataset", "nq-sample", "--limit", "2", "--k", "2", "--llm",
               "acme/hosted-model", "--backend", "openai", "--prompt-format", "chat",
               "--base-url", server.base_url, "--max-new-tokens", "8", "--shard-size", "1",
               "--run", str(cut_run(tmp_path)), "--cache-dir", str(tmp_path / "calls"),
               "--out", str(tmp_path / "out")]
    monkeypatch.setattr(_Faults, "refusing", True)
    failed = CliRunner().invoke(cli, command)
    assert isinstance(failed.exception, Refusal), failed.output  # the partial is kept
    [partial] = (tmp_path / "out/utility/nq-sample/hosted-model").glob(".v1.*.partial")
    first = json.loads(cut_run(tmp_path).read_text().split()[0].join('""'))
    (partial / ".left-out").mkdir()
    (partial / ".left-out/00000.jsonl").write_text(
        json.dumps({"qid": first, "reason": "too long"}) + "\n")  # as a killed build left it
    monkeypatch.setattr(_Faults, "refusing", False)
    resumed = CliRunner().invoke(cli, command)
    assert resumed.exit_code == 0, resumed.output
    version = tmp_path / "out/utility/nq-sample/hosted-model/v1"
    assert "unanswered" not in json.loads((version / "manifest.json").read_text())
    assert first in (version / "data-00000.jsonl").read_text()
