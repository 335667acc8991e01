"""`score --rag` on rankings (their top k, in ranked order) and the known/unknown split of the
RAG rows, with the scripted reader: nq2's pools labelled by it (support/nq2.py). It knows the
Nobel query closed-book (known) and not the other (unknown), and with evidence answers with
the first passage it is shown, verbatim: so a query is answered right iff its first passage
holds a gold answer, and the order of the passages shows in the answers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats
from support.nq2 import cut_run, scripted_utility

import labeler.llm
from labeler.artifacts.reader import load_artifact
from labeler.cli import cli
from labeler.errors import InputError
from labeler.llm.config import LLMConfig
from labeler.scoring.score import score
from labeler.sources.passage import Passage
from labeler.tasks.utility import evidence_prompt

READER = LLMConfig("scripted")  # answers with the scripted backend (the `setup` fixture)


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """(tmp_path, the scripted artifact, its records by qid, the scripted backend), with every
    model load giving the scripted backend."""
    folder, scripted = scripted_utility(cut_run(tmp_path), tmp_path / "out")
    monkeypatch.setattr(labeler.llm, "load_backend", lambda name, **options: scripted)
    records = {r["qid"]: r for r in load_artifact(folder).records}
    return tmp_path, folder, records, scripted


def _pids(record: dict) -> list[str]:
    return [c["pid"] for c in record["candidates"]]


def _write(path, lines: list[dict]):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _rankings(root, records) -> tuple:
    """(the pool order, the Nobel query's reversed and the other's in pool order): the first
    is answered right on both queries, the second on the unknown one only."""
    (q0, r0), (q1, r1) = records.items()
    assert r0["known"] and not r1["known"] and _pids(r1)[0] in r1["utility_pids"]
    pool = _write(root / "pool.jsonl", [{"qid": q, "ranking": _pids(r)} for q, r in
                                        records.items()])
    mixed = _write(root / "mixed.jsonl", [{"qid": q0, "ranking": _pids(r0)[::-1]},
                                          {"qid": q1, "ranking": _pids(r1)}])
    return pool, mixed


def _asked(records: dict, pids: dict[str, list[str]], scripted) -> list[str]:
    """The rendered prompts the artifact's with-passage prompt makes of `pids`, in order."""
    out = []
    for qid, chosen in pids.items():
        pool = {c["pid"]: c for c in records[qid]["candidates"]}
        passages = [Passage(p, pool[p]["title"], pool[p]["text"]) for p in chosen]
        out.append(scripted.render(evidence_prompt(records[qid]["question"], passages)))
    return out


def test_ranking_answers_with_its_top_k_in_ranked_order_split_known_unknown(setup):
    root, folder, records, scripted = setup
    pool, mixed = _rankings(root, records)
    before = len(scripted.batches("generate"))
    report = score(mixed, folder, rag=True, rag_k=2, baseline=pool, llm=READER)

    # one batched call per run; each prompt the ranking's first two passages, in its order;
    # the baseline's prompt that the submission asked already is not asked again
    asked = [[scripted.render(p) for p in batch] for batch in scripted.batches("generate")[before:]]
    (q0, r0), (q1, r1) = records.items()
    assert asked == [_asked(records, {q0: _pids(r0)[::-1][:2], q1: _pids(r1)[:2]}, scripted),
                     _asked(records, {q0: _pids(r0)[:2]}, scripted)]
    # the Nobel query's first passage is now one without the answer: wrong, though known
    assert report.per_query["rag_accuracy"].tolist() == [0.0, 1.0]
    m, b = report.summary, report.baseline.summary
    assert (m["rag_accuracy"], m["rag_accuracy_known"], m["rag_accuracy_unknown"]) == (
        0.5, 0.0, 1.0)
    assert (b["rag_accuracy"], b["rag_accuracy_known"], b["rag_accuracy_unknown"]) == (
        1.0, 1.0, 1.0)
    assert (report.counts["known_queries"], report.counts["unknown_queries"]) == (1, 1)
    # the artifact's own answers, split alike
    assert m["rag_all_accuracy_known"] == float(r0["rag"]["all"]["correct"])
    assert m["rag_utilitarian_accuracy_unknown"] == float(r1["rag"]["utilitarian"]["correct"])
    # RAG over every query; NDCG over the one with gold only, as without --rag
    assert report.qids == [q0, q1] and math.isnan(report.per_query["ndcg@5"][0])
    plain = score(mixed, folder)
    assert plain.qids == [q1] and m["ndcg@5"] == plain.summary["ndcg@5"]
    assert report.counts["empty_gold_left_out"] == plain.counts["empty_gold_left_out"] == 1
    # the paired test: rag_accuracy over both queries, its known part over the one
    test = report.tests["rag_accuracy"]
    assert (test.n, test.wins, test.ties, test.losses) == (2, 0, 1, 1)
    assert report.tests["rag_accuracy_known"].n == 1
    assert "rag_all_accuracy" not in report.tests  # the artifact's, the same for both


def test_default_k_is_five_and_a_selection_is_shown_in_pool_order(setup):
    root, folder, records, scripted = setup
    q0, (q1, r1) = next(iter(records)), list(records.items())[1]
    # the unknown query's answer passage second: a ranking shows it second (wrong), a
    # selection of the same two in pool order first (right)
    order = [_pids(r1)[2], _pids(r1)[0]]
    ranking = _write(root / "r.jsonl", [{"qid": q1, "ranking": order}])
    selection = _write(root / "s.jsonl", [{"qid": q1, "selected": order}])
    before = len(scripted.batches("generate"))
    ranked = score(ranking, folder, rag=True, llm=READER, missing="skip")
    selected = score(selection, folder, rag=True, llm=READER, missing="skip")
    assert ranked.summary["rag_accuracy"] == 0.0 and selected.summary["rag_accuracy"] == 1.0
    ranked_prompt, selected_prompt = (b[0] for b in scripted.batches("generate")[before:])
    assert scripted.render(ranked_prompt) == _asked(records, {q1: order}, scripted)[0]
    assert scripted.render(selected_prompt) == _asked(records, {q1: order[::-1]}, scripted)[0]
    # the whole pool (3 < 5) in ranked order; a query the ranking lacks is scored 0
    full = _write(root / "full.jsonl", [{"qid": q1, "ranking": _pids(r1)[::-1]}])
    report = score(full, folder, rag=True, llm=READER)
    assert scripted.render(scripted.batches("generate")[-1][0]) == _asked(
        records, {q1: _pids(r1)[::-1]}, scripted)[0]
    assert report.per_query["rag_accuracy"].tolist() == [0.0, 0.0]
    assert report.missing == [q0] and report.summary["rag_accuracy_known"] == 0.0


def test_paired_t_test_of_rag_accuracy_matches_scipy(setup):
    root, folder, records, _ = setup
    pool, mixed = _rankings(root, records)
    report = score(pool, folder, rag=True, llm=READER, baseline=mixed)
    a, b = report.per_query["rag_accuracy"], report.baseline.per_query["rag_accuracy"]
    assert a.tolist() == [1.0, 1.0] and b.tolist() == [0.0, 1.0]
    test = report.tests["rag_accuracy"]
    assert test.p == pytest.approx(stats.ttest_rel(a, b).pvalue) == pytest.approx(0.5)
    # the known part holds one query: no test (NaN), its one win counted
    known = report.tests["rag_accuracy_known"]
    assert (known.n, known.wins) == (1, 1) and np.isnan(known.p)


def test_json_and_tables_show_the_split(setup):
    root, folder, records, _ = setup
    pool, mixed = _rankings(root, records)
    args = ["score", str(mixed), "--against", str(folder), "--rag", "--llm", "scripted",
            "--baseline", str(pool)]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["metrics"]["rag_accuracy_unknown"] == 1.0
    assert out["counts"]["known_queries"] == 1 and out["dataset"] == "nq-sample"
    assert out["metrics"]["ndcg@5"] is not None
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "the paper's Table 6 layout" in result.stdout and "Known (n=1)" in result.stdout
    table6 = result.stdout.split("the paper's Table 6 layout")[1].splitlines()
    rows = {cells[0]: cells[1:] for line in table6 if line.startswith("│ ")
            for cells in [[c.strip() for c in line.strip("│").split("│")]]}
    assert rows["mixed"] == ["100.00", "0.00", "50.00"]  # Unknown, Known, All
    assert rows["pool"] == ["100.00", "100.00", "100.00"]


@pytest.mark.parametrize("options, message", [
    (["--rag-k", "2"], ("field 'rag_k': --rag-k 2: how many of a ranking's passages --rag "
                        "answers with, at least 1; this is a ranking without --rag")),
    (["--rag", "--rag-k", "2", "--kind", "selection"], None),
])
def test_rag_k_applies_to_rankings_with_rag(setup, options, message):
    root, folder, records, _ = setup
    pool, _ = _rankings(root, records)
    sel = _write(root / "sel.jsonl", [{"qid": q, "selected": []} for q in records])
    sub = sel if "selection" in options else pool
    result = CliRunner().invoke(cli, ["score", str(sub), "--against", str(folder), *options])
    assert result.exit_code == 1 and isinstance(result.exception, InputError)
    assert result.exception.line() == (message or "field 'rag_k': --rag-k 2: how many of a "
                                       "ranking's passages --rag answers with, at least 1; "
                                       "this is a selection")


def test_ranking_rag_with_the_bundled_model(tmp_path, nq2_build):
    """SmolLM2's nq2 artifact: a ranking in pool order, at the default k (5, more than the
    3 candidates), asks exactly the build's all-candidate prompts, so its answers come from
    the call cache and its accuracy per query is the artifact's `rag.all`; the reversed
    ranking asks two new prompts."""
    from support.nq2 import copy_nq2_build

    from labeler.llm.call_store import cache_stats

    _, calls, artifact = copy_nq2_build(nq2_build, tmp_path)
    records = {r["qid"]: r for r in load_artifact(artifact).records}
    pool = _write(tmp_path / "pool.jsonl", [{"qid": q, "ranking": _pids(r)}
                                            for q, r in records.items()])
    flip = _write(tmp_path / "flip.jsonl", [{"qid": q, "ranking": _pids(r)[::-1]}
                                            for q, r in records.items()])
    before = cache_stats(calls).misses
    result = CliRunner().invoke(cli, ["score", str(pool), "--against", str(artifact), "--rag",
                                      "--baseline", str(flip), "--cache-dir", str(calls),
                                      "--per-query", str(tmp_path / "rows.jsonl")])
    assert result.exit_code == 0, result.output
    assert cache_stats(calls).misses - before == 2  # the reversed prompts only
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    for row in rows:
        record = records[row["qid"]]
        assert row["rag_accuracy"] == row["rag_all_accuracy"] == float(
            record["rag"]["all"]["correct"])
        assert row["rag_accuracy_known" if record["known"] else "rag_accuracy_unknown"] == (
            row["rag_accuracy"])
    assert "the paper's Table 6 layout" in result.stdout and "Table 5 layout" in result.stdout
