"""The openai backend beyond vLLM's own server: `transformers serve` of the bundled SmolLM2 (a
second real server, pinned to its folder, whose /v1/models does not list it and which gives
no log-probabilities), replies a server should not give (a truncated 200, a 200 holding an
error, fewer choices than n) injected by the proxy, a hosted-API-shaped server (chat only,
top_logprobs only, no local tokenizer for the served name) and `labeler judge` through a
served model. Counted at the proxies in front of the session's servers
(tests/support/served.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.nq2 import NQ2_OPTIONS, cut_run
from support.served import API_KEY

from labeler.cli import cli
from labeler.errors import InputError
from labeler.llm import Sampling, chat, load_backend
from labeler.llm.cache import CachedBackend
from labeler.llm.call_store import cache_stats
from labeler.llm.models import resolve_model
from labeler.llm.openai_api import OpenAIBackend
from labeler.llm.served import ServerError

pytestmark = pytest.mark.vllm


def records(out: Path, artifact: str, dataset: str, llm: str) -> tuple[list[dict], dict]:
    """The records and manifest of the one version built under `out`."""
    [version] = (out / artifact / dataset / llm).iterdir()
    rows = [json.loads(line) for f in sorted(version.glob("data-*.jsonl"))
            for line in f.read_text().splitlines()]
    return rows, json.loads((version / "manifest.json").read_text())


def test_a_utility_build_through_transformers_serve_answers_as_in_process_hf(
        transformers_server, nq2_build, session_cache, tmp_path):
    """The server answers only to its folder's path and its /v1/models lists no model:
    a warning, and --served-model names it. Greedy answers equal the hf build's (nq2)."""
    server, proxy = transformers_server
    (tmp_path / "calls").mkdir()
    (tmp_path / "calls/models").symlink_to(Path(session_cache) / "models")
    before = proxy.total()
    result = CliRunner().invoke(cli, [
        "build", "--llm", "smollm2-135m", *NQ2_OPTIONS, "--run", str(cut_run(tmp_path)),
        "--backend", "openai", "--base-url", proxy.base_url, "--served-model",
        server.served_name, "--price-in", "0.5", "--price-out", "1.5",
        "--cache-dir", str(tmp_path / "calls"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"warning: {proxy.base_url}: GET /models answered 500" in " ".join(
        result.output.split())
    served, manifest = records(tmp_path / "out", "utility", "nq-sample", "smollm2-135m")
    local, _ = records(nq2_build / "out", "utility", "nq-sample", "smollm2-135m")
    validated = CliRunner().invoke(cli, ["validate", str(
        tmp_path / "out/utility/nq-sample/smollm2-135m/v1")])
    assert validated.exit_code == 0, validated.output
    assert [r["closed_book_answer"] for r in served] == [r["closed_book_answer"] for r in local]
    assert [[c["answer"] for c in r["candidates"]] for r in served] == \
        [[c["answer"] for c in r["candidates"]] for r in local]
    assert [r["utility_pids"] for r in served] == [r["utility_pids"] for r in local]
    usage = manifest["served"]["usage"]
    assert manifest["served"]["offers"] == ["chat", "completions"]
    assert manifest["served"]["used"] == ["chat"] and manifest["served"]["server"] is None
    assert usage["requests"] == proxy.total() - before == cache_stats(tmp_path / "calls").entries
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert manifest["served"]["cost_usd"] == pytest.approx(
        (usage["prompt_tokens"] * 0.5 + usage["completion_tokens"] * 1.5) / 1e6)


def test_a_rubric_build_through_transformers_serve_is_refused_before_any_request(
        transformers_server, session_cache, tmp_path):
    """transformers serve gives no log-probabilities (neither prompt_logprobs, echo nor
    top_logprobs): the rubric's P(yes) is refused in one line before any request."""
    server, proxy = transformers_server
    (tmp_path / "calls").mkdir()
    (tmp_path / "calls/models").symlink_to(Path(session_cache) / "models")
    before = proxy.total()
    run = subprocess.run([
        sys.executable, "-m", "labeler", "build", "--artifact", "rubric", "--dataset",
        "cisi-sample", "--llm", "smollm2-135m", "--backend", "openai", "--base-url",
        proxy.base_url, "--served-model", server.served_name, "--limit", "2", "--rerank-k",
        "3", "--cache-dir", str(tmp_path / "calls"), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 1, run.stderr[-2000:]
    *warnings, line = run.stderr.splitlines()
    assert all(w.startswith("warning: ") for w in warnings), warnings
    assert line.startswith(
        "error: field 'backend': --artifact rubric needs choice_probs, which needs "
        "prompt_logprobs (vLLM) or echo with logprobs on completions or top_logprobs on chat "
        f"completions; the server at {proxy.base_url} offers none of them"), line
    assert proxy.total() == before and not (tmp_path / "out").exists()


def test_unusable_replies_are_asked_again_and_every_prompt_answered_once(
        vllm_server, session_cache, tmp_path, monkeypatch):
    """A truncated 200 body, a 200 holding an error object and fewer choices than n are
    each asked again, as a 5xx is; a server that never answers usably is one line naming
    the server and the request."""
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("LABELER_SERVER_BACKOFF", "0")
    backend = CachedBackend(load_backend(
        "smollm2-135m", backend="openai", base_url=proxy.base_url, cache_dir=session_cache,
        use_cache=False, concurrency=1), cache_dir=tmp_path / "calls")
    prompts = [chat(f"Name a fruit that starts with {c}.") for c in "ABCD"]
    sampling = Sampling(n=2, temperature=0.8, seed=3, max_tokens=4)
    before, asked = proxy.total(), len(proxy.asked)
    proxy.fault("truncated", "error", "fewer")
    answers = backend.generate(prompts, sampling)
    assert proxy.spoiled[-3:] == ["truncated", "error", "fewer"]
    assert proxy.total() - before == 4 == len(set(proxy.asked[asked:]))
    assert [len(a) for a in answers] == [2, 2, 2, 2]

    proxy.fault(*["truncated"] * 10)
    with pytest.raises(ServerError) as refused:
        backend.generate([chat("Name a fruit that starts with E.")], sampling)
    assert str(refused.value) == (
        f"{proxy.base_url}/chat/completions: no usable answer to generate 1 of 1 after 10 "
        "tries (last: 200 with a malformed body (24 bytes))")


def hosted_build(proxy, root: Path, *args: str) -> str:
    """A build through the proxy shaped as a hosted API, of a model labeler has no
    tokenizer for ('hosted/smollm2-135m', offline): what it printed."""
    result = CliRunner().invoke(cli, [
        "build", "--llm", "hosted/smollm2-135m", "--backend", "openai", "--base-url",
        proxy.base_url, "--served-model", "smollm2-135m", *args,
        "--cache-dir", str(root / "calls"), "--out", str(root / "out")],
        env={"OPENAI_API_KEY": API_KEY})
    assert result.exit_code == 0, result.output
    return result.output


def test_a_hosted_api_shaped_server_builds_utility_and_rubric_labels(vllm_server, tmp_path,
                                                                     monkeypatch):
    """Chat completions only, top_logprobs their only scores, /version and completions
    hidden, no tokenizer here: the messages key the cache, P(yes) is read from the first
    answer token's top_logprobs, and the manifest says so with the tokens used. A prompt
    over the window is the server's to refuse: one line, not retried."""
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    proxy.hidden = {"/version", "/v1/completions"}
    try:
        before = proxy.total()
        said = hosted_build(proxy, tmp_path / "utility", "--dataset", "nq-sample", "--limit", "2",
                     "--k", "2", "--max-new-tokens", "16", "--run",
                     str(cut_run(tmp_path)))
        utility, manifest = records(tmp_path / "utility/out", "utility", "nq-sample",
                                    "smollm2-135m")
        served = proxy.total() - before
        hosted_build(proxy, tmp_path / "rubric", "--artifact", "rubric", "--dataset",
                     "cisi-sample", "--limit", "1", "--rerank-k", "2", "--max-questions", "2")
        rubric, rubric_manifest = records(tmp_path / "rubric/out", "rubric", "cisi-sample",
                                          "smollm2-135m")
    finally:
        proxy.hidden = set()
    assert "no tokenizer here" in said and "cost" not in said
    assert len(utility) == 2 and all(r["closed_book_answer"] for r in utility)
    assert manifest["served"] | {"usage": None} == {
        "server": None, "offers": ["chat", "top_logprobs"], "used": ["chat"],
        "tokenizer": False, "usage": None}
    assert manifest["served"]["usage"]["requests"] == served
    assert manifest["served"]["usage"]["prompt_tokens"] > 0
    assert rubric_manifest["served"]["used"] == ["chat", "top_logprobs"]
    [query] = rubric
    assert query["questions"]
    candidates = [json.loads(line) for f in sorted(
        next((tmp_path / "rubric/out/rubric/cisi-sample/smollm2-135m").iterdir())
        .glob("candidates-*.jsonl")) for line in f.read_text().splitlines()]
    p_yes = [p for c in candidates for p in c["p_yes"]]
    assert p_yes and all(0 <= p <= 1 for p in p_yes) and len(set(p_yes)) > 1

    hosted = OpenAIBackend(resolve_model("hosted/smollm2-135m"), base_url=proxy.base_url,
                           served_model="smollm2-135m")
    before = len(proxy.asked)
    with pytest.raises(InputError, match=r"^field 'prompt': .* refused 1 of 1 generate prompts "
                                         r"as too long for the model: .*8192"):
        hosted.generate([chat("word " * 9000)], Sampling(max_tokens=4))
    assert len(proxy.asked) == before


def test_judge_pvs_through_the_served_model_selects_as_the_in_process_judge(
        vllm_server, nq2_build, session_cache, tmp_path):
    _, proxy = vllm_server
    (tmp_path / "calls").mkdir()
    (tmp_path / "calls/models").symlink_to(Path(session_cache) / "models")
    run = cut_run(tmp_path)

    def judged(name: str, *backend: str) -> list[dict]:
        out = tmp_path / f"{name}.jsonl"
        result = CliRunner().invoke(cli, [
            "judge", "--llm", "smollm2-135m", "--method", "pvs", *NQ2_OPTIONS, "--run",
            str(run), *backend, "--cache-dir", str(tmp_path / "calls"), "--out", str(out)],
            env={"OPENAI_API_KEY": API_KEY})
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in out.read_text().splitlines()]

    local = judged("hf")
    before = proxy.total()
    served = judged("served", "--backend", "openai", "--base-url", proxy.base_url,
                    "--prompt-format", "text")
    assert proxy.total() > before
    assert [(r["qid"], r["selected"]) for r in served] == \
        [(r["qid"], r["selected"]) for r in local]
