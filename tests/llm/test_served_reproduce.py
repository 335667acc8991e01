"""The three `labeler reproduce` commands through the session's `vllm serve` of the bundled
SmolLM2 (its proxy counting the answers), each on one query with short answers: every
artifact and the report they write validate, and their LLM calls reached the server (AttR's
attention, the perplexities and the trained extractor run here, on hf: no server has them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.nq2 import TOP3_RUN
from support.served import API_KEY

from labeler.cli import cli
from labeler.llm.call_store import cache_stats
from labeler.workflows.validate import validate_path

pytestmark = pytest.mark.vllm


def reproduced(proxy, session_cache: str, root: Path, *args: str) -> tuple[Path, int]:
    """`labeler reproduce ARGS` through the proxy, its call cache sharing the session's
    converted model: (the report's version folder, the answers the proxy passed)."""
    (root / "calls").mkdir(parents=True)
    (root / "calls/models").symlink_to(Path(session_cache) / "models")
    before = proxy.total()
    result = CliRunner().invoke(cli, [
        "reproduce", *args, "--backend", "openai", "--base-url", proxy.base_url,
        "--out", str(root / "out"), "--cache-dir", str(root / "calls"), "--json"],
        env={"OPENAI_API_KEY": API_KEY})
    assert result.exit_code == 0, result.output
    return Path(json.loads(result.stdout)["path"]), proxy.total() - before


def first_query_run(root: Path) -> Path:
    """nq-sample's first query's real top 3 (of tests/fixtures), as `root/top3.trec`."""
    run = root / "top3.trec"
    run.write_text("".join(line for line in TOP3_RUN.read_text().splitlines(keepends=True)
                           if line.startswith("nq-open-dev-oracle-0 ")))
    return run


def versions(out: Path) -> list[Path]:
    """Every artifact version under `out` (the report's too), each checked by `validate`."""
    folders = sorted(m.parent for m in out.rglob("manifest.json"))
    assert folders and {f: validate_path(f) for f in folders} == {f: [] for f in folders}
    return folders


def served_builds(out: Path) -> list[dict]:
    """The manifests of the builds under `out` that asked the served model."""
    manifests = [json.loads((f / "manifest.json").read_text()) for f in versions(out)]
    return [m for m in manifests if m.get("llm_config", {}).get("backend") == "openai"]


def test_a_tiny_utility_paper_runs_through_the_served_model(vllm_server, session_cache,
                                                            tmp_path):
    """One nq-sample query over its real top 2, answers and judgments capped at 8 tokens:
    the builds, judges, scores and comparison through the server; AttR and the
    perplexities on hf."""
    _, proxy = vllm_server
    report, asked = reproduced(
        proxy, session_cache, tmp_path, "utility-paper", "--dataset", "nq-sample", "--llm",
        "smollm2-135m", "--limit", "1", "--k", "2", "--max-new-tokens", "8", "--run",
        str(first_query_run(tmp_path)))
    assert (report / "table-2.md").stat().st_size > 0
    builds = served_builds(tmp_path / "out")
    assert {m["pool"]: m["served"]["usage"]["requests"] > 0 for m in builds} == {
        "rp": True, "hgp": False, "mcp": False}  # the call cache answers the other pools
    assert asked > sum(m["served"]["usage"]["requests"] for m in builds)  # the judges too


def test_a_tiny_seer_paper_runs_through_the_served_model(vllm_server, session_cache, tmp_path):
    """One training and one test query of nq-sample over its real top 2, M = 4 samples of
    at most 16 tokens, one LoRA step: the pairs, the reference, the base extractor's
    evidence and Table 1's answers through the server; the trained extractor here."""
    _, proxy = vllm_server
    report, asked = reproduced(
        proxy, session_cache, tmp_path, "seer-paper", "--dataset", "nq-sample", "--llm",
        "smollm2-135m", "--faithfulness", "llm", "--train-limit", "1", "--limit", "1", "--k",
        "2", "--samples", "4", "--max-new-tokens", "16", "--steps", "1", "--train-batch-size",
        "1", "--gradient-accumulation", "1", "--run", str(first_query_run(tmp_path)))
    assert (report / "table1.md").stat().st_size > 0
    builds = served_builds(tmp_path / "out")  # the reference's one sample each: no pairs
    assert [m["counts"]["pairs"] > 0 for m in builds] == [True, False]
    assert all(m["served"]["usage"]["requests"] > 0 for m in builds)
    assert asked > sum(m["served"]["usage"]["requests"] for m in builds)  # evidence, Table 1


def test_a_tiny_rubric_experiment_runs_through_the_served_model(vllm_server, github,
                                                                session_cache, tmp_path):
    """`reproduce rubric-experiment` on one esci query (the tests' GitHub server's rows),
    its questions and P(yes) asked of the server."""
    _, proxy = vllm_server
    report, asked = reproduced(
        proxy, session_cache, tmp_path, "rubric-experiment", "--dataset", "esci", "--llm",
        "smollm2-135m", "--queries", "1", "--rerank-k", "2", "--max-questions", "1")
    assert (report / "results.json").stat().st_size > 0
    assert asked > cache_stats(tmp_path / "calls").entries > 0  # P(yes): 8
    assert served_builds(tmp_path / "out")
