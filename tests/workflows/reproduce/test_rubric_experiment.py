"""`labeler reproduce rubric-experiment` on ESCI's real rows (the tests' mirror of GitHub's
files, whose catalogue holds judged products: WANDS's holds none) with the bundled SmolLM2:
2 sampled queries, the BM25 top 5, 2 questions. Every
table and the figure are written, each number is what the separate commands give, a rerun
runs no step, and the dry run plans without loading a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import cli
from labeler.formats import Run
from labeler.metrics.ranking import experiment_ndcg
from labeler.sources.registry import load_source

OPTIONS = ["reproduce", "rubric-experiment", "--dataset", "esci", "--llm", "smollm2-135m",
           "--queries", "2", "--rerank-k", "5", "--max-questions", "2"]


def test_the_dry_run_plans_every_step_and_loads_nothing(tmp_path):
    result = CliRunner().invoke(cli, [*OPTIONS, "--out", str(tmp_path), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    steps = [row["step"] for row in json.loads(result.stdout)["plan"]]
    assert steps[:4] == [
        "esci: BM25 baseline run, title^9.3 text^4.1 (zero-score products kept)",
        "esci: decision arms' BM25 run, title^9.4 text^4 (zero-score products kept)",
        "esci: build rubric (bag of questions and the direct question)",
        "esci: build rubric, threshold variant"]
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_reproduce_writes_every_table_as_the_separate_commands_give(loads, github, tmp_path):
    out, calls = tmp_path / "out", tmp_path / "calls"
    options = [*OPTIONS, "--out", str(out), "--cache-dir", str(calls)]
    first = CliRunner().invoke(cli, [*options, "--json"])
    assert first.exit_code == 0, first.output
    report = Path(json.loads(first.stdout)["path"])
    assert json.loads(first.stdout)["ran"] == 4
    for name in ("ndcg.md", "tests.md", "results.json"):
        assert (report / name).stat().st_size > 0
    assert (report / "ndcg.png").read_bytes().startswith(b"\x89PNG")
    assert "not in the seed" in (report / "ndcg.md").read_text()
    rows = json.loads((report / "results.json").read_text())["rows"]
    means = {(r["arm"], r["metric"]): r["mean"] for r in rows if "arm" in r}

    # the seeded sample, and BM25 as it ran (test_bm25_fields: zero scores kept): five a query,
    # the baseline's and the decision arms' boosts
    work = out / "rubric-experiment" / "esci"
    baseline, run = Run.from_file(work / "bm25.trec"), Run.from_file(work / "bm25_boosted.trec")
    esci = load_source("esci")
    assert sorted(run) == sorted(baseline) == sorted(q.qid for q in esci.queries)
    assert all(len(docs) == 5 for docs in [*run.values(), *baseline.values()])
    assert run != baseline  # 9.4/4 against 9.3/4.1

    # the separate command: labeler build on the same run, its stats and its fused.trec
    separate = CliRunner().invoke(cli, [
        "build", "--artifact", "rubric", "--dataset", "esci", "--llm", "smollm2-135m",
        "--sample", "2", "--run", str(work / "bm25_boosted.trec"), "--k", "5", "--rerank-k", "5",
        "--max-questions", "2", "--direct", "--out", str(tmp_path / "separate"),
        "--cache-dir", str(calls), "--json"])
    assert separate.exit_code == 0, separate.output
    [built] = (tmp_path / "separate" / "rubric" / "esci" / "smollm2-135m").iterdir()
    stats = json.loads((built / "manifest.json").read_text())["stats"]
    for arm, method in (("direct", "single"), ("bag_fused", "fused"), ("bag", "rubric"),
                        ("direct_fused", "single_fused")):
        assert means[arm, "ndcg@10"] == pytest.approx(stats[f"ndcg@10_{method}"], abs=1e-12)
    qrels = {q.qid: q.relevance for q in esci.queries if q.qid in run}
    fused = experiment_ndcg(Run.from_file(built / "fused.trec"), qrels, max_grade=3,
                            qids=list(run))
    assert means["bag_fused", "ndcg@10 (cheat_at_search)"] == pytest.approx(fused.mean())
    assert means["bm25", "ndcg@10"] > 0 and means["bm25", "ndcg@10 (cheat_at_search)"] > 0

    again = CliRunner().invoke(cli, [*options, "--json"])
    assert again.exit_code == 0, again.output
    assert (json.loads(again.stdout)["ran"], json.loads(again.stdout)["skipped"]) == (0, 4)
    second = json.loads((report.with_name("v2") / "results.json").read_text())["rows"]
    assert second == rows
