"""The openai backend against a real `vllm serve` of the bundled SmolLM2 (the session's
`vllm_server`, vLLM's CPU build): a utility build equal to the in-process vllm backend's, a
rubric build's P(yes) within the contract's tolerance of it, the key written nowhere, a build
killed mid-way asking nothing committed again, an operation the server cannot answer refused
before any request, and the faults a served model meets (a 429 storm, a server that goes away
mid-build and comes back, a wrong key, a server that gives no scores, a prompt it refuses as
too long), counted at the proxy in
front of the server (tests/support/served.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.alike import assert_labelled_alike
from support.nq2 import TOP3_RUN, cut_run
from support.processes import kill_when
from support.served import API_KEY

from labeler.cli import cli
from labeler.errors import InputError
from labeler.llm import (
    ChoiceRequest,
    LoglikelihoodRequest,
    Message,
    Sampling,
    chat,
    load_backend,
)
from labeler.llm.cache import CachedBackend
from labeler.llm.call_store import cache_stats
from labeler.llm.models import resolve_model
from labeler.llm.openai_api import OpenAIBackend
from labeler.sources.registry import load_source

pytestmark = pytest.mark.vllm

#: a probability: the contract's for the served backend (tests/llm/test_contract.py)
P_YES_TOLERANCE = 2e-4
#: nats: the contract's for the served backend (tests/llm/test_contract.py)
LOGLIKELIHOOD_TOLERANCE = 2e-3


@contextmanager
def chat_only(proxy):
    """The proxy hiding all but chat completions without log-probabilities (no /version, no
    completions, no logprobs fields): a server that is not vLLM and gives no scores."""
    proxy.hidden, proxy.refused_fields = {"/version", "/v1/completions"}, {"logprobs"}
    try:
        yield
    finally:
        proxy.hidden, proxy.refused_fields = set(), set()


def build(root: Path, session_cache: str, *backend: str) -> tuple[list[dict], dict, str]:
    """The records, manifest and output of a utility build of three nq-sample queries; the
    session's converted model is linked into its cache folder (a served model's tokenizer)."""
    (root / "calls").mkdir(parents=True, exist_ok=True)
    if not (root / "calls/models").exists():
        (root / "calls/models").symlink_to(Path(session_cache) / "models")
    result = CliRunner().invoke(cli, [
        "build", "--dataset", "nq-sample", "--llm", "smollm2-135m", *backend,
        "--limit", "3", "--k", "3", "--max-new-tokens", "32", "--with-likelihood",
        "--run", str(TOP3_RUN), "--cache-dir", str(root / "calls"), "--out", str(root / "out")])
    assert result.exit_code == 0, result.output
    [data] = (root / "out/utility/nq-sample/smollm2-135m/v1").glob("data-*.jsonl")
    manifest = json.loads((data.parent / "manifest.json").read_text())
    return [json.loads(line) for line in data.read_text().splitlines()], manifest, result.output


def served(proxy, session_cache, *, cache_dir, **options):
    """The openai backend through the proxy (its tokenizer from the session's converted
    model), behind the call cache of `cache_dir`."""
    return CachedBackend(load_backend("smollm2-135m", backend="openai", base_url=proxy.base_url,
                                      cache_dir=session_cache, use_cache=False, **options),
                         cache_dir=cache_dir)


def test_a_served_build_labels_nq_sample_as_the_in_process_vllm_build(
        smollm_vllm, vllm_server, session_cache, tmp_path, monkeypatch):
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    local, _, _ = build(tmp_path / "vllm", session_cache, "--backend", "vllm")
    before = proxy.total()
    served_build = ("--backend", "openai", "--base-url", proxy.base_url, "--prompt-format",
                    "text")
    records, manifest, output = build(tmp_path / "served", session_cache, *served_build)
    asked = proxy.total() - before
    assert manifest["llm_runtime"] == {"backend": "openai", "prompt_format": "text",
                                       "server": "0.32.0",
                                       "root": manifest["llm_runtime"]["root"]}
    assert manifest["llm_runtime"]["root"].startswith("smollm2-135m-")
    assert manifest["llm_config"]["prompt_format"] == "text"
    assert_labelled_alike(local, records, queries=3, k=3)
    assert "requests/s" in output and "tokens/s" in output
    # a rerun is answered by the call cache: the server is asked nothing
    (tmp_path / "served/out").rename(tmp_path / "first-out")
    build(tmp_path / "served", session_cache, *served_build)
    assert asked > 0 and proxy.total() - before == asked
    # the key is in no file the builds wrote, nor in what they printed
    written = [p for p in tmp_path.rglob("*") if p.is_file()
               and "models" not in p.relative_to(tmp_path).parts]  # the linked model
    assert any(p.name.startswith("calls.sqlite") for p in written)
    assert not [p for p in written if API_KEY.encode() in p.read_bytes()]
    assert API_KEY not in output


def rubric_build(root: Path, session_cache: str, *backend: str) -> tuple[list[dict], list]:
    """The questions and P(yes) of a rubric build of two cisi-sample queries, three documents
    each: (each query's questions, (qid, pid, each question's P(yes)) by candidate)."""
    (root / "calls").mkdir(parents=True)
    (root / "calls/models").symlink_to(Path(session_cache) / "models")
    result = CliRunner().invoke(cli, [
        "build", "--artifact", "rubric", "--dataset", "cisi-sample", "--llm", "smollm2-135m",
        *backend, "--limit", "2", "--rerank-k", "3", "--max-questions", "2",
        "--cache-dir", str(root / "calls"), "--out", str(root / "out")])
    assert result.exit_code == 0, result.output
    [version] = (root / "out/rubric/cisi-sample/smollm2-135m").iterdir()
    queries = [json.loads(line) for f in sorted(version.glob("data-*.jsonl"))
               for line in f.read_text().splitlines()]
    rows = [json.loads(line) for f in sorted(version.glob("candidates-*.jsonl"))
            for line in f.read_text().splitlines()]
    return ([q["questions"] for q in queries],
            sorted((r["qid"], r["pid"], r["p_yes"]) for r in rows if r["p_yes"]))


def test_a_served_rubric_build_reads_p_yes_as_the_in_process_vllm_build(
        smollm_vllm, vllm_server, session_cache, tmp_path, monkeypatch):
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    questions, local = rubric_build(tmp_path / "vllm", session_cache, "--backend", "vllm")
    served_questions, remote = rubric_build(
        tmp_path / "served", session_cache, "--backend", "openai", "--base-url",
        proxy.base_url, "--prompt-format", "text")
    assert served_questions == questions and len(local) == 6
    assert [(qid, pid) for qid, pid, _ in remote] == [(qid, pid) for qid, pid, _ in local]
    gaps = [abs(a - b) for (_, _, x), (_, _, y) in zip(local, remote)
            for a, b in zip(x, y, strict=True)]
    assert gaps and max(gaps) < P_YES_TOLERANCE, gaps


def test_a_429_storm_is_waited_out_as_retry_after_says(vllm_server, session_cache, tmp_path,
                                                       monkeypatch):
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("LABELER_SERVER_BACKOFF", "60")  # were Retry-After ignored: minutes
    backend = served(proxy, session_cache, cache_dir=tmp_path, concurrency=4)
    prompts = [chat(f"Name a colour that starts with {c}.") for c in "BGRY"]
    proxy.storm(12, retry_after="0.2")
    start, before = time.monotonic(), proxy.total()
    answers = backend.generate(prompts, Sampling(max_tokens=4))
    assert time.monotonic() - start < 50
    assert len(proxy.refused) >= 12 and proxy.total() - before == 4
    assert all(a[0].text for a in answers)


def test_a_server_gone_mid_build_is_waited_for_and_nothing_answered_is_asked_again(
        vllm_server, session_cache, tmp_path, monkeypatch):
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("LABELER_SERVER_BACKOFF", "0.5")
    backend = served(proxy, session_cache, cache_dir=tmp_path, concurrency=2, batch_size=4)
    prompts = [chat(f"What is {n} plus {n}?") for n in range(10)]
    before = proxy.total()
    proxy.outage(after=before + 3)  # the server dies after three answers ...
    threading.Timer(3.0, proxy.restore).start()  # ... and is back three seconds later
    answers = backend.generate(prompts, Sampling(max_tokens=6))
    assert proxy.total() - before == 10  # every prompt answered once: none asked twice
    assert backend.generate(prompts, Sampling(max_tokens=6)) == answers
    assert proxy.total() - before == 10  # the rerun from the call cache


def test_a_build_killed_mid_way_and_rerun_asks_no_committed_prompt_again(
        vllm_server, session_cache, tmp_path, monkeypatch):
    """A `labeler build` process SIGKILLed once the (slowed) server has answered three of
    its prompts (three queries' closed-book, one-passage, all-passage ... answers), then
    rerun to the end. Counted at
    the proxy: the POSTs it answered in each run, by body. An answer the server gave but the
    killed build had not committed (in flight at the kill, at most one at concurrency 1) may
    be asked again; no committed one is."""
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    (tmp_path / "calls").mkdir()
    (tmp_path / "calls/models").symlink_to(Path(session_cache) / "models")
    command = [sys.executable, "-m", "labeler", "build", "--dataset", "nq-sample", "--llm",
               "smollm2-135m", "--backend", "openai", "--base-url", proxy.base_url,
               "--concurrency", "1", "--limit", "3", "--k", "1", "--max-new-tokens", "8",
               "--run", str(TOP3_RUN), "--cache-dir", str(tmp_path / "calls"),
               "--out", str(tmp_path / "out")]
    start = len(proxy.asked)
    proxy.delay = 0.5  # the kill lands between answers, not after the last
    try:
        kill_when(command, lambda: len(proxy.asked) - start >= 3, "the served build")
        while proxy.in_flight:  # the answer in flight at the kill, given to no one
            time.sleep(0.05)
    finally:
        proxy.delay = 0.0
    first = proxy.asked[start:]
    committed = cache_stats(tmp_path / "calls").entries
    in_flight = len(first) - committed
    assert len(first) >= 3 and 0 <= in_flight <= 1, (len(first), committed)
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    second = proxy.asked[start + len(first):]
    distinct = cache_stats(tmp_path / "calls").entries
    assert committed < distinct == len(set(first + second))
    # both runs' POSTs, less the answers in flight at the kill: each prompt once
    assert len(first) + len(second) - in_flight == distinct
    assert len(set(first) & set(second)) <= in_flight
    assert list((tmp_path / "out/utility/nq-sample/smollm2-135m/v1").glob("data-*.jsonl"))


def test_a_wrong_key_fails_in_one_line_before_the_build(vllm_server, tmp_path):
    _, proxy = vllm_server
    before = proxy.total()
    run = subprocess.run([
        sys.executable, "-m", "labeler", "build", "--dataset", "nq-sample", "--llm",
        "smollm2-135m", "--backend", "openai", "--base-url", proxy.base_url, "--limit", "3",
        "--k", "3", "--run", str(TOP3_RUN), "--out", str(tmp_path / "out")],
        env={**os.environ, "OPENAI_API_KEY": "sk-wrong-key-0000"}, capture_output=True,
        text=True, timeout=600, check=False)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [(
        f"error: cannot load model 'smollm2-135m': {proxy.base_url}: the server refused the "
        "API key (401 Unauthorized) (set OPENAI_API_KEY to the server's key)")]
    assert "sk-wrong-key" not in run.stdout + run.stderr
    assert proxy.total() == before and not (tmp_path / "out").exists()


def test_an_operation_the_server_cannot_answer_fails_before_any_request(
        vllm_server, session_cache, monkeypatch):
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    with chat_only(proxy):  # no /version, no completions, no logprobs: only chat
        backend = OpenAIBackend(resolve_model("smollm2-135m"), base_url=proxy.base_url,
                                cache_dir=session_cache)
    before = proxy.total()
    with pytest.raises(InputError, match=r"^field 'backend': choice_probs needs "
                                         r"prompt_logprobs \(vLLM\) or echo with logprobs on "
                                         r"completions or top_logprobs on chat completions; "
                                         r"the server at .* offers none of them"):
        backend.choice_probs([ChoiceRequest(chat("Is water wet?"))])
    assert proxy.total() == before
    [[answer]] = backend.generate([chat("What is the capital of France?")],
                                  Sampling(max_tokens=8))  # chat completions: any server
    assert "Paris" in answer.text and backend.key()["server"] is None


def test_a_rubric_build_on_a_server_without_prompt_logprobs_fails_before_any_request(
        vllm_server, session_cache, tmp_path):
    """The rubric's P(yes) needs choice_probs: a server that gives no log-probabilities is
    refused once the model loads, in one line naming the artifact, the operation and what
    the server lacks, before retrieval or any POST."""
    _, proxy = vllm_server
    (tmp_path / "calls").mkdir()
    (tmp_path / "calls/models").symlink_to(Path(session_cache) / "models")
    before = proxy.total()
    with chat_only(proxy):
        run = subprocess.run([
            sys.executable, "-m", "labeler", "build", "--artifact", "rubric", "--dataset",
            "cisi-sample", "--llm", "smollm2-135m", "--backend", "openai", "--base-url",
            proxy.base_url, "--limit", "2", "--rerank-k", "3", "--cache-dir",
            str(tmp_path / "calls"), "--out", str(tmp_path / "out")],
            env={**os.environ, "OPENAI_API_KEY": API_KEY}, capture_output=True, text=True,
            timeout=600, check=False)
    assert run.returncode == 1, run.stderr[-2000:]
    [line] = run.stderr.splitlines()
    assert line.startswith(
        "error: field 'backend': --artifact rubric needs choice_probs, which needs "
        "prompt_logprobs (vLLM) or echo with logprobs on completions or top_logprobs on chat "
        f"completions; the server at {proxy.base_url} offers none of them"), line
    assert proxy.total() == before and not (tmp_path / "out").exists()


def test_a_prompt_the_server_refuses_as_too_long_leaves_its_query_out(
        vllm_server, session_cache, tmp_path, monkeypatch):
    """The server refuses one request, the second query's closed-book prompt, as too long
    for the model: the build goes on, leaves that query out with the server's reason (the
    manifest's `unanswered`, a row of the summary), and validates, the prompt asked once; a
    rerun asks it again (a refusal is no answer, so not cached) and labels both queries."""
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    (tmp_path / "calls").mkdir()
    (tmp_path / "calls/models").symlink_to(Path(session_cache) / "models")
    first, second = load_source("nq-sample", limit=2).queries
    command = ["build", "--dataset", "nq-sample", "--llm", "smollm2-135m", "--backend",
               "openai", "--base-url", proxy.base_url, "--limit", "2", "--k", "2",
               "--max-new-tokens", "8", "--run", str(cut_run(tmp_path)),
               "--cache-dir", str(tmp_path / "calls")]
    env = {"OPENAI_API_KEY": API_KEY, "COLUMNS": "250"}
    proxy.too_long = f"without the explanation. Question: {second.question}"
    try:
        built = CliRunner().invoke(cli, [*command, "--out", str(tmp_path / "out")], env=env)
        assert built.exit_code == 0, built.output
        assert proxy.long_asked == 1  # not sent again when the shard is labelled query by query
        assert "queries left out (a prompt refused as too long)" in built.output
        [data] = (tmp_path / "out/utility/nq-sample/smollm2-135m/v1").glob("data-*.jsonl")
        manifest = json.loads((data.parent / "manifest.json").read_text())
        [left_out] = manifest["unanswered"]
        assert left_out["qid"] == second.qid
        assert left_out["reason"].startswith(f"field 'prompt': {proxy.base_url}/chat/"
                                             "completions refused 1 of ")
        assert "maximum context length is 8192 tokens" in left_out["reason"]
        assert [json.loads(line)["qid"] for line in data.read_text().splitlines()] == [first.qid]
        checked = CliRunner().invoke(cli, ["validate", str(data.parent)])
        assert checked.exit_code == 0, checked.output
        proxy.refusing = False  # the rerun, a process of its own (this one asks it no more)
        again = subprocess.run([sys.executable, "-m", "labeler", *command, "--out",
                                str(tmp_path / "again")], env={**os.environ, **env},
                               capture_output=True, text=True, timeout=600, check=False)
    finally:
        proxy.too_long, proxy.refusing = None, True
    assert again.returncode == 0, again.stderr[-2000:]
    assert proxy.long_asked == 2
    [data] = (tmp_path / "again/utility/nq-sample/smollm2-135m/v1").glob("data-*.jsonl")
    assert "unanswered" not in json.loads((data.parent / "manifest.json").read_text())
    assert [json.loads(line)["qid"] for line in data.read_text().splitlines()] == \
        [first.qid, second.qid]


def test_a_server_without_prompt_logprobs_scores_prompts_by_echo_as_prompt_logprobs_do(
        smollm, smollm_served, vllm_server, session_cache, monkeypatch):
    """lm-evaluation-harness's way: the proxy refuses every request holding prompt_logprobs
    (the probe's too), so the probe finds completions with echo and logprobs, and the
    log-likelihoods and P(choice) read from the echoed prompt's token_logprobs are those of
    vLLM's prompt_logprobs (the session's `smollm_served`) and of the in-process hf model."""
    _, proxy = vllm_server
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    question = chat("What is the capital of France?")
    likelihoods = [LoglikelihoodRequest(question, "The capital of France is Paris."),
                   LoglikelihoodRequest(question, "The capital of France is Berlin."),
                   LoglikelihoodRequest(chat("Who wrote Hamlet?", system="Answer briefly."),
                                        "William Shakespeare")]
    choices = [ChoiceRequest(question + (Message("assistant", "The capital of France is"),),
                             (" Paris", " Berlin")),
               ChoiceRequest(chat("Is water wet? Answer yes or no."), ("yes", "no"))]
    proxy.refused_fields = {"prompt_logprobs"}
    try:
        echo = OpenAIBackend(resolve_model("smollm2-135m"), base_url=proxy.base_url,
                             cache_dir=session_cache)
        before = proxy.total()
        got = echo.loglikelihood(likelihoods), echo.choice_probs(choices)
        asked = proxy.total() - before
    finally:
        proxy.refused_fields = set()
    assert echo.capabilities.way("loglikelihood") == "echo"
    assert smollm_served.capabilities.way("loglikelihood") == "prompt_logprobs"
    assert echo.report()["used"] == ["echo"] and "prompt_logprobs" not in echo.report()["offers"]
    assert asked == len(likelihoods) + 4  # one request per choice's first token
    assert got[0][0] > got[0][1]  # Paris is the likelier answer
    for reference in (smollm_served, smollm):
        near = reference.loglikelihood(likelihoods), reference.choice_probs(choices)
        assert got[0] == pytest.approx(near[0], abs=LOGLIKELIHOOD_TOLERANCE)
        for probs, expected in zip(got[1], near[1]):
            assert probs == pytest.approx(expected, abs=P_YES_TOLERANCE)
