"""The rubric's scores and report from hand-built records: the threshold's arithmetic, the
single question fused like the rubric, and NDCG@10 with graded judgments and the paired t-test
against BM25, checked against pytrec_eval and scipy."""

from __future__ import annotations

import pytest
import pytrec_eval
from scipy import stats as scipy_stats

from labeler.tasks.rubric import METHODS, RubricConfig, RubricTask


def _record(qid: str, relevance: dict[str, int], candidates: list[tuple]) -> dict:
    """A labelled query as `RubricTask.label` writes it: candidates (pid, bm25, p_yes, single)
    in BM25 order, those with p_yes None not scored by the LLM."""
    return {"qid": qid, "query": f"query {qid}", "llm": "scripted", "output": "", "retried": False,
            "structured": False, "fallback": True,
            "questions": [{"id": f"{qid}-1", "text": "A?"}, {"id": f"{qid}-2", "text": "B?"}],
            "relevance": relevance,
            "candidates": [{"pid": pid, "bm25": bm25, "p_yes": p or [], "single": single,
                            "scored": p is not None} for pid, bm25, p, single in candidates]}


#: four queries, five BM25 candidates each, the top four scored by the LLM; judgments graded
#: 0/1/2 as WANDS and ESCI grade them, some judged documents outside the candidates (they count
#: in the ideal DCG); no two scores of one ranking tie, so every ranking is unambiguous
RECORDS = [
    _record("q1", {"a": 2, "c": 1, "e": 2, "z": 1}, [
        ("a", 25.0, [0.20, 0.10], 0.30),  # rubric 0.30; fused 28.0: first when fused
        ("b", 8.0, [0.95, 0.90], 0.80),   # rubric 1.85: first alone; fused 26.5
        ("c", 7.0, [0.60, 0.55], 0.95),   # rubric 1.15; fused 18.5; single first alone
        ("d", 6.0, [0.05, 0.15], 0.10),   # rubric 0.20; fused 8.0
        ("e", 5.0, None, None)]),         # not scored: stays last
    _record("q2", {"f": 0, "g": 2, "h": 1}, [
        ("f", 4.0, [0.90, 0.85], 0.95),
        ("g", 3.5, [0.80, 0.75], 0.65),
        ("h", 3.0, [0.10, 0.30], 0.20),
        ("i", 2.0, [0.40, 0.45], 0.35),
        ("j", 1.0, None, None)]),
    _record("q3", {"m": 1, "n": 2}, [
        ("k", 12.0, [0.30, 0.20], 0.25),
        ("l", 11.0, [0.10, 0.05], 0.15),
        ("m", 10.5, [0.70, 0.80], 0.60),
        ("n", 10.0, [0.99, 0.97], 0.90),
        ("o", 9.0, None, None)]),
    _record("q4", {"p": 2, "t": 1}, [
        ("p", 6.0, [0.50, 0.45], 0.55),
        ("q", 5.0, [0.65, 0.60], 0.75),
        ("r", 4.5, [0.02, 0.01], 0.05),
        ("s", 4.0, [0.35, 0.25], 0.40),
        ("t", 3.0, None, None)]),
]


def _task(threshold: float | None = None) -> RubricTask:
    return RubricTask(RubricConfig(dataset="cisi-sample", k=5, rerank_k=4, weight=10.0,
                                   direct=True, threshold=threshold))


def test_the_threshold_counts_only_p_yes_above_it():
    rows = {r["pid"]: r for r in _task(0.6).derive(RECORDS[:1], {})["candidates"]}
    assert rows["b"]["rubric"] == pytest.approx(0.95 + 0.90)
    assert rows["c"]["rubric"] == 0.0  # 0.60 is not above 0.6, 0.55 below it
    assert rows["c"]["fused"] == 7.0 and rows["c"]["single_fused"] == pytest.approx(7.0 + 9.5)
    assert rows["a"]["single_fused"] == 25.0  # single 0.30 not counted
    assert rows["b"]["p_yes"] == [0.95, 0.90] and rows["a"]["single"] == 0.30  # stored raw
    assert rows["e"]["rubric"] is None and rows["e"]["fused"] == rows["e"]["single_fused"] == 5.0
    plain = {r["pid"]: r for r in _task().derive(RECORDS[:1], {})["candidates"]}
    assert plain["c"]["rubric"] == pytest.approx(1.15)  # no threshold: the plain sum
    assert plain["c"]["fused"] == pytest.approx(7.0 + 11.5)
    assert plain["a"]["single_fused"] == pytest.approx(25.0 + 3.0)
    assert [plain[p]["rank"] for p in "abcde"] == [1, 2, 3, 4, 5]  # fused 28, 26.5, 18.5, 8


def test_the_threshold_is_a_probability():
    from labeler.errors import InputError

    with pytest.raises(InputError, match=r"threshold must be in \[0.0, 1.0\], got 1.5"):
        RubricConfig(dataset="cisi-sample", threshold=1.5)


def _independent_run(record: dict, method: str) -> dict[str, float]:
    """The method's scores as the experiment ranks: the scored candidates by the method's
    score, above the rest in BM25 order (their BM25 scores)."""
    w, run = 10.0, {}
    for c in record["candidates"]:
        if not c["scored"]:
            run[c["pid"]] = c["bm25"]
            continue
        rubric, single = sum(c["p_yes"]), c["single"]
        score = {"bm25": c["bm25"], "single": single, "single_fused": c["bm25"] + w * single,
                 "rubric": rubric, "fused": c["bm25"] + w * rubric}[method]
        run[c["pid"]] = 1000.0 + score
    return run


def test_ndcg_and_t_tests_match_pytrec_eval_and_scipy():
    task = _task()
    tables = task.derive(RECORDS, {})
    stats = task.statistics(tables["data"])
    qrels = {r["qid"]: r["relevance"] for r in RECORDS}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
    expected = {m: [evaluator.evaluate({r["qid"]: _independent_run(r, m)})[r["qid"]]
                    ["ndcg_cut_10"] for r in RECORDS] for m in METHODS}
    assert len({tuple(v) for v in expected.values()}) == len(METHODS)  # the rankings differ
    for record, data in zip(RECORDS, tables["data"]):
        for m in METHODS:
            assert data["ndcg@10"][m] == pytest.approx(expected[m][RECORDS.index(record)],
                                                       abs=1e-12)
    assert stats["judged_queries"] == 4
    for m in METHODS:
        assert stats[f"ndcg@10_{m}"] == pytest.approx(sum(expected[m]) / 4, abs=1e-12)
    for m in METHODS[1:]:
        reference = scipy_stats.ttest_rel(expected[m], expected["bm25"])
        test = stats[f"{m}_vs_bm25"]
        assert (test["t"], test["p"]) == pytest.approx((reference.statistic, reference.pvalue))
        assert stats[f"{m}_vs_bm25_p"] == pytest.approx(reference.pvalue)
        assert test["n"] == 4


def test_the_single_question_is_reported_only_when_asked():
    task = RubricTask(RubricConfig(dataset="cisi-sample", k=5, rerank_k=4))
    unasked = [r | {"candidates": [c | {"single": None} for c in r["candidates"]]}
               for r in RECORDS]
    tables = task.derive(unasked, {})
    assert all(d["ndcg@10"]["single"] is None and d["ndcg@10"]["single_fused"] is None
               for d in tables["data"])
    assert all(r["single_fused"] is None for r in tables["candidates"] if r["rubric"] is not None)
    stats = task.statistics(tables["data"])
    assert stats["ndcg@10_single_fused"] is None and stats["single_fused_vs_bm25"] is None
    assert stats["ndcg@10_fused"] is not None
