"""Scoring against a real utility artifact (tests/scoring/fixtures/utility-v1, see README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from click.testing import CliRunner
from scipy import stats

from labeler.cli import cli
from labeler.errors import ArtifactError, InputError

ARTIFACT = Path(__file__).parent / "fixtures" / "utility-v1"
DATA = ARTIFACT / "data-00000.jsonl"
# The artifact's queries; 0, 1 and 5 have one utilitarian passage each, 2, 3, 4 none.
Q = [f"nq-open-dev-oracle-{i}" for i in range(6)]
GOLD = {Q[0]: "nq-oracle:64aaafc597c5", Q[1]: "nq-oracle:fcd918e70be9",
        Q[5]: "nq-oracle:bb53216e992d"}


def _records() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text().splitlines()]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


def _json(*args) -> dict:
    result = CliRunner().invoke(cli, ["score", *map(str, args), "--json"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return json.loads(result.stdout)


def test_gold_is_utility_pids():
    assert {r["qid"]: r["utility_pids"] for r in _records()} == {
        q: [GOLD[q]] if q in GOLD else [] for q in Q}


def test_selection_against_the_folder(tmp_path):
    sub = _write(tmp_path / "sel.jsonl", [
        {"qid": Q[0], "selected": [GOLD[Q[0]], "flashrag:314"]},  # P 1/2, R 1
        {"qid": Q[1], "selected": []},  # P 0, R 0
        {"qid": Q[5], "selected": [GOLD[Q[5]], GOLD[Q[5]]]},  # duplicate: P 1, R 1
        {"qid": Q[2], "selected": []},  # empty gold, nothing selected: right
        {"qid": Q[3], "selected": ["nq-oracle:ef873355e878"]},  # empty gold, a pick: wrong
    ])  # Q[4] (empty gold) is missing
    zero = _json(sub, "--against", ARTIFACT, "--drop-invalid-pids")  # Q[5]'s repeat, counted
    p, r = (0.5 + 0 + 1) / 3, (1 + 0 + 1) / 3
    assert zero["metrics"]["precision"] == pytest.approx(p)
    assert zero["metrics"]["recall"] == pytest.approx(r)
    assert zero["metrics"]["f1"] == pytest.approx(2 * p * r / (p + r))
    assert zero["metrics"]["mean_f1"] == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert zero["metrics"]["empty_gold_accuracy"] == pytest.approx(1 / 3)  # missing Q[4]: 0
    assert zero["counts"] | {"queries_with_gold": 3} == {
        "queries": 6, "missing": 1, "skipped_lines": 0, "queries_with_gold": 3,
        "queries_empty_gold": 3, "dropped_pids": 1}
    skip = _json(sub, "--against", DATA, "--missing", "skip", "--drop-invalid-pids")
    assert skip["metrics"]["empty_gold_accuracy"] == 0.5 and skip["counts"]["queries"] == 5


def _runs() -> dict[str, dict[str, dict[str, float]]]:
    """Two real rankings of every query's candidates, as {qid: {pid: score}}."""
    records = _records()
    return {
        # the candidates' retrieval rank reversed: worst first, the human-only passage first
        "reversed": {r["qid"]: {c["pid"]: float(c["rank"] or 99) for c in r["candidates"]}
                     for r in records},
        # text length mod 3: many ties, which trec_eval breaks by pid descending
        "tied": {r["qid"]: {c["pid"]: float(len(c["text"]) % 3) for c in r["candidates"]}
                 for r in records},
    }


def _pytrec(run: dict, qrels: dict) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query ndcg@5, ndcg@10, recall@5 and mrr@5 (recip_rank on the top 5)."""
    per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_5", "ndcg_cut_10", "recall_5"})
    per = per.evaluate(run)
    top = {q: dict(sorted(d.items(), key=lambda x: (x[1], x[0]), reverse=True)[:5])
           for q, d in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top)
    return {q: {"ndcg@5": m["ndcg_cut_5"], "ndcg@10": m["ndcg_cut_10"],
                "recall@5": m["recall_5"], "mrr@5": rr[q]["recip_rank"]} for q, m in per.items()}


def _submit(path: Path, run: dict) -> Path:
    return _write(path, [{"qid": q, "scores": d} for q, d in run.items()])


@pytest.mark.parametrize("name", ["reversed", "tied"])
def test_ranking_averages_over_non_empty_gold_as_pytrec_eval_on_gup_qrels(tmp_path, name):
    """The paper writes qrels for the gold utilitarian passages only and lets pytrec_eval
    average: the queries with empty gold are not in them, so they are not in the mean."""
    run = _runs()[name]
    gup_qrels = {r["qid"]: dict.fromkeys(r["utility_pids"], 1) for r in _records()
                 if r["utility_pids"]}
    want = _pytrec(run, gup_qrels)
    assert sorted(want) == sorted(GOLD)  # pytrec_eval scores the non-empty half only
    rows_file = tmp_path / "rows.jsonl"
    report = _json(_submit(tmp_path / "run.jsonl", run), "--against", ARTIFACT, "--k", "5",
                   "--k", "10", "--per-query", rows_file)
    assert report["counts"] == {"queries": 3, "missing": 0, "skipped_lines": 0,
                                "queries_without_relevant": 0, "empty_gold_left_out": 3,
                                "empty_rankings_left_out": 0}
    for metric in ("ndcg@5", "ndcg@10", "recall@5", "mrr@5"):
        mean = np.mean([want[q][metric] for q in want])
        assert report["metrics"][metric] == pytest.approx(mean, abs=1e-12), metric
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert [row["qid"] for row in rows] == [q for q in Q if q in GOLD]


def test_ranking_missing_queries_among_non_empty_gold(tmp_path):
    """Absent from the submission: Q[1] (gold) counts 0 with --missing zero, as trec_eval -c
    over the GUP qrels; Q[2] (empty gold) is left out either way."""
    run = {q: d for q, d in _runs()["reversed"].items() if q not in (Q[1], Q[2])}
    gup_qrels = {q: {pid: 1} for q, pid in GOLD.items()}
    want = _pytrec(run, gup_qrels)  # Q[0] and Q[5]
    sub = _submit(tmp_path / "run.jsonl", run)
    zero = _json(sub, "--against", DATA)
    assert (zero["counts"]["queries"], zero["counts"]["missing"]) == (3, 1)
    assert zero["counts"]["empty_gold_left_out"] == 3
    assert zero["metrics"]["ndcg@5"] == pytest.approx(
        (want[Q[0]]["ndcg@5"] + want[Q[5]]["ndcg@5"]) / 3, abs=1e-12)
    skip = _json(sub, "--against", DATA, "--missing", "skip")
    assert (skip["counts"]["queries"], skip["counts"]["missing"]) == (2, 1)
    assert skip["metrics"]["ndcg@5"] == pytest.approx(
        np.mean([m["ndcg@5"] for m in want.values()]), abs=1e-12)


def test_include_empty_averages_over_every_query_as_before(tmp_path):
    """--include-empty: the empty-gold queries count 0, the mean is over all six, as pytrec_eval
    over every candidate's label; a qrels file of those same labels averages the same way."""
    records = _records()
    qrels = {r["qid"]: {c["pid"]: c["utility"] for c in r["candidates"]} for r in records}
    run = {q: d for q, d in _runs()["tied"].items() if q != Q[5]}  # Q[5] absent
    sub = _submit(tmp_path / "run.jsonl", run)
    want = _pytrec(run, qrels)
    rows_file = tmp_path / "rows.jsonl"
    report = _json(sub, "--against", DATA, "--include-empty", "--per-query", rows_file)
    rows = {row["qid"]: row for row in map(json.loads, rows_file.read_text().splitlines())}
    for q in run:
        assert rows[q]["ndcg@5"] == pytest.approx(want[q]["ndcg@5"], abs=1e-12)
        assert rows[q]["recall@5"] == pytest.approx(want[q]["recall@5"], abs=1e-12)
    assert rows[Q[5]]["missing"] is True and rows[Q[5]]["ndcg@10"] == 0.0
    assert report["counts"] == {"queries": 6, "missing": 1, "skipped_lines": 0,
                                "queries_without_relevant": 3, "empty_gold_left_out": 0,
                                "empty_rankings_left_out": 0}
    assert report["metrics"]["ndcg@10"] == pytest.approx(
        np.mean([want[q]["ndcg@10"] for q in run] + [0.0]), abs=1e-12)
    # the same labels as TREC qrels: trec_eval -c's average over every judged query, unchanged
    qrels_file = _write_qrels(tmp_path / "utility.qrels", qrels)
    against_qrels = _json(sub, "--against", qrels_file, "--missing", "zero")
    assert against_qrels["metrics"] == report["metrics"]
    assert against_qrels["counts"] == report["counts"]


def _write_qrels(path: Path, qrels: dict) -> Path:
    path.write_text("".join(f"{q} 0 {pid} {label}\n" for q, judged in qrels.items()
                            for pid, label in judged.items()))
    return path


def test_baseline_paired_over_the_same_queries(tmp_path):
    runs = _runs()
    sub = _submit(tmp_path / "reversed.jsonl", runs["reversed"])
    base = _submit(tmp_path / "tied.jsonl", runs["tied"])
    gup_qrels = {q: {pid: 1} for q, pid in GOLD.items()}
    a, b = (np.array([m["ndcg@5"] for m in _pytrec(runs[n], gup_qrels).values()])
            for n in ("reversed", "tied"))
    report = _json(sub, "--against", ARTIFACT, "--baseline", base)
    test = report["baseline"]["tests"]["ndcg@5"]
    assert report["baseline"]["counts"]["empty_gold_left_out"] == 3
    assert test["n"] == 3 and test["wins"] + test["ties"] + test["losses"] == 3
    assert test["mean_a"] == pytest.approx(a.mean()) and test["mean_b"] == pytest.approx(b.mean())
    assert test["p"] == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=1e-9)
    every = _json(sub, "--against", ARTIFACT, "--baseline", base, "--include-empty")
    assert every["baseline"]["tests"]["ndcg@5"]["n"] == 6


def test_include_empty_is_for_rankings_only(tmp_path):
    sub = _write(tmp_path / "sel.jsonl", [{"qid": Q[0], "selected": [GOLD[Q[0]]]}])
    result = CliRunner().invoke(cli, ["score", str(sub), "--against", str(ARTIFACT),
                                      "--include-empty"])
    assert result.exit_code == 1 and isinstance(result.exception, InputError)
    assert result.exception.line() == (
        "field 'include_empty': --include-empty applies to rankings only, this is a selection "
        "(a selection already scores empty-gold queries, as accuracy)")


def test_changed_artifact_is_refused(tmp_path):
    folder = shutil.copytree(ARTIFACT, tmp_path / "v1")
    data = folder / "data-00000.jsonl"
    data.write_text(data.read_text().replace('"utility": 0', '"utility": 1', 1))
    sub = _write(tmp_path / "sel.jsonl", [{"qid": Q[0], "selected": []}])
    result = CliRunner().invoke(cli, ["score", str(sub), "--against", str(folder)])
    assert result.exit_code == 1 and isinstance(result.exception, ArtifactError)
    assert "sha256 mismatch" in result.exception.line()


def test_extraction_length_and_answer_coverage(tmp_path):
    sub = _write(tmp_path / "ev.jsonl", [
        {"qid": Q[0], "evidence": "awarded in 1901 to Wilhelm Conrad Röntgen, of Germany"},
        {"qid": Q[1], "evidence": "Deadpool 2 opens in May."},  # the answer is "May 18, 2018"
        {"qid": Q[5], "evidence": ""},
    ])
    report = _json(sub, "--against", ARTIFACT, "--missing", "skip")
    assert report["kind"] == "extraction"
    assert report["metrics"] == {"tokens": pytest.approx((9 + 5 + 0) / 3),
                                 "answer_coverage": pytest.approx(1 / 3)}


@pytest.mark.slow
def test_extraction_with_the_real_model(tmp_path, monkeypatch, smollm):
    """`--llm` through the CLI; the bundled SmolLM2 (loaded once per session) stands in."""
    import labeler.llm

    loaded = []
    monkeypatch.setattr(labeler.llm, "load_backend",
                        lambda model, **kw: loaded.append((model, kw)) or smollm)
    evidence = ["The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen.",
                "Deadpool is a superhero film."]
    sub = _write(tmp_path / "ev.jsonl", [{"qid": q, "evidence": e} for q, e in zip(Q, evidence)])
    rows_file = tmp_path / "rows.jsonl"
    report = _json(sub, "--against", ARTIFACT, "--llm", "smollm2-135m", "--missing", "skip",
                   "--per-query", rows_file)
    assert loaded[0][0] == "smollm2-135m"
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    counts = smollm.count_tokens(evidence)
    assert [row["tokens"] for row in rows] == counts
    assert counts[0] > len(evidence[0].split())  # model tokens, not words
    for row in rows:
        assert 0 < row["helpfulness"] < 1 and 0 < row["faithfulness"] < 1
        assert -1 <= row["conciseness"] <= 1
    assert rows[0]["answer_coverage"] == 1.0 and rows[1]["answer_coverage"] == 0.0
    assert set(report["metrics"]) == {"tokens", "answer_coverage", "helpfulness", "faithfulness",
                                      "conciseness", "weighted"}


@pytest.mark.slow
def test_blank_evidence_gets_every_experts_floor_and_is_counted(tmp_path, monkeypatch, smollm):
    """Blank extractions are never shown to a judge: each expert's floor, below real text."""
    import labeler.llm

    monkeypatch.setattr(labeler.llm, "load_backend", lambda model, **kw: smollm)
    sub = _write(tmp_path / "ev.jsonl", [
        {"qid": Q[0], "evidence": "The first Nobel Prize in Physics was awarded in 1901 to "
                                  "Wilhelm Conrad Röntgen."},
        {"qid": Q[1], "evidence": ""}, {"qid": Q[5], "evidence": "   "}])
    rows_file = tmp_path / "rows.jsonl"
    report = _json(sub, "--against", ARTIFACT, "--llm", "smollm2-135m", "--missing", "skip",
                   "--per-query", rows_file)
    rows = {row["qid"]: row for row in map(json.loads, rows_file.read_text().splitlines())}
    for qid in (Q[1], Q[5]):
        assert (rows[qid]["faithfulness"], rows[qid]["helpfulness"],
                rows[qid]["conciseness"]) == (0.0, 0.0, -1.0)
        assert rows[qid]["weighted"] < rows[Q[0]]["weighted"]
    assert report["counts"]["blank_evidence"] == 2
