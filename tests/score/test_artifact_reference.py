"""Scoring against a real utility artifact (tests/score/fixtures/utility-v1, see README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from click.testing import CliRunner

from labeler.cli import cli
from labeler.errors import ArtifactError

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
    zero = _json(sub, "--against", ARTIFACT)
    p, r = (0.5 + 0 + 1) / 3, (1 + 0 + 1) / 3
    assert zero["metrics"]["precision"] == pytest.approx(p)
    assert zero["metrics"]["recall"] == pytest.approx(r)
    assert zero["metrics"]["f1"] == pytest.approx(2 * p * r / (p + r))
    assert zero["metrics"]["mean_f1"] == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert zero["metrics"]["empty_gold_accuracy"] == pytest.approx(1 / 3)  # missing Q[4]: 0
    assert zero["counts"] | {"queries_with_gold": 3} == {
        "queries": 6, "missing": 1, "skipped_lines": 0, "queries_with_gold": 3,
        "queries_empty_gold": 3}
    skip = _json(sub, "--against", DATA, "--missing", "skip")
    assert skip["metrics"]["empty_gold_accuracy"] == 0.5 and skip["counts"]["queries"] == 5


def test_ranking_against_the_jsonl_matches_pytrec_eval(tmp_path):
    records = _records()
    qrels = {r["qid"]: {c["pid"]: c["utility"] for c in r["candidates"]} for r in records}
    # rank candidates by retrieval rank reversed (worst first), ties by pid; one query absent
    run = {r["qid"]: {c["pid"]: float(len(c["text"]) % 3) for c in r["candidates"]}
           for r in records[:-1]}
    sub = _write(tmp_path / "run.jsonl", [{"qid": q, "scores": d} for q, d in run.items()])
    rows_file = tmp_path / "rows.jsonl"
    report = _json(sub, "--against", DATA, "--k", "3", "--k", "10", "--per-query", rows_file)
    rows = {row["qid"]: row for row in map(json.loads, rows_file.read_text().splitlines())}
    want = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_3", "ndcg_cut_10", "recall_3"})
    want = want.evaluate(run)
    for q in run:
        assert rows[q]["ndcg@3"] == pytest.approx(want[q]["ndcg_cut_3"], abs=1e-12)
        assert rows[q]["ndcg@10"] == pytest.approx(want[q]["ndcg_cut_10"], abs=1e-12)
        assert rows[q]["recall@3"] == pytest.approx(want[q]["recall_3"], abs=1e-12)
    missing = records[-1]["qid"]
    assert rows[missing]["missing"] is True and rows[missing]["ndcg@10"] == 0.0
    assert report["counts"]["queries_without_relevant"] == 3
    assert report["metrics"]["ndcg@10"] == pytest.approx(
        np.mean([want[q]["ndcg_cut_10"] for q in run] + [0.0]), abs=1e-12)


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
    assert rows[0]["answer_coverage"] == 1.0 and rows[1]["answer_coverage"] == 0.0
    assert set(report["metrics"]) == {"tokens", "answer_coverage", "helpfulness", "faithfulness"}
