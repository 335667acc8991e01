"""Ranking metrics: per-query equality with pytrec_eval (trec_eval) on CISI-based runs."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from labeler.errors import InputError
from labeler.metrics.ranking import experiment_ndcg, rank_metrics

CISI_QRELS = Path(__file__).parents[1] / "scoring" / "fixtures" / "cisi.qrels"


def _cisi() -> dict[str, dict[str, int]]:
    """CISI's human judgments (every listed pair is relevant: label 1)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in CISI_QRELS.read_text().splitlines():
        qid, _, docid, label = line.split()
        qrels.setdefault(qid, {})[docid] = int(label)
    return qrels


def _generated(seed: int) -> tuple[dict, dict]:
    """CISI qrels made harder, and a run over CISI doc ids with many tied scores.

    - some relevant documents get label 2 (graded gain), some judged documents 0 or -1;
    - CISI queries 77-112 have no relevant document: judged 0 only (empty gold);
    - the run retrieves only part of each query's relevant documents (the rest are never
      retrieved), plus judged-0, negative and unjudged documents;
    - scores come from 4 values, so ties (broken by docid, descending) decide many ranks;
      doc ids are numbers as strings, so "9" ranks before "10" on a tie;
    - some queries are absent from the run, one is present with no documents.
    """
    rng = random.Random(seed)
    docs = [str(d) for d in range(1, 1461)]
    qrels = {}
    for qid, judged in _cisi().items():
        labels = {d: rng.choice([1, 1, 2]) for d in judged}
        for d in rng.sample(docs, 8):
            labels.setdefault(d, rng.choice([0, 0, -1]))
        qrels[qid] = labels
    for qid in map(str, range(77, 113)):
        qrels[qid] = {d: 0 for d in rng.sample(docs, 5)}
    run = {}
    for qid, labels in qrels.items():
        if rng.random() < 0.1:
            continue  # absent from the run
        judged = list(labels)
        picked = rng.sample(judged, k=rng.randint(0, len(judged) * 2 // 3))
        picked += rng.sample(docs, 25 - min(len(picked), 20))
        run[qid] = {d: rng.choice([0.25, 0.5, 0.75, 1.0]) for d in dict.fromkeys(picked)}
    run[next(iter(run))] = {}
    return qrels, run


def _top(docs: dict[str, float], k: int) -> dict[str, float]:
    """The run cut to its top k in trec_eval's order (score, then docid, descending)."""
    return dict(sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_equals_pytrec_eval_per_query(seed):
    qrels, run = _generated(seed)
    measures = {"ndcg_cut_5", "ndcg_cut_10", "recall_10"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    top10 = {q: _top(d, 10) for q, d in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    qids = list(expected)  # pytrec_eval drops queries absent from the run
    assert len(qids) < len(qrels)
    got = rank_metrics(run, qrels, ks=(5, 10), qids=qids)
    checks = {"ndcg@5": "ndcg_cut_5", "ndcg@10": "ndcg_cut_10", "recall@10": "recall_10"}
    for ours, theirs in checks.items():
        want = np.array([expected[q][theirs] for q in qids])
        np.testing.assert_allclose(got[ours], want, rtol=0, atol=1e-12, err_msg=ours)
    want = np.array([rr[q]["recip_rank"] for q in qids])
    np.testing.assert_allclose(got["mrr@10"], want, rtol=0, atol=1e-12, err_msg="mrr@10")
    # the generated data exercise what they claim to
    assert any(v > 0 for v in got["ndcg@10"]) and any(v < 1 for v in got["recall@10"])
    assert any(not any(g > 0 for g in qrels[q].values()) for q in qids)


def test_missing_queries_score_zero_and_follow_qids_order():
    qrels, run = _generated(5)
    absent = [q for q in qrels if q not in run]
    assert absent
    got = rank_metrics(run, qrels, qids=absent + ["1"])
    assert all((values[:-1] == 0).all() for values in got.values())
    assert list(got) == ["ndcg@5", "ndcg@10", "mrr@5", "mrr@10", "recall@5", "recall@10"]


def test_tie_rule_and_labels_by_hand():
    qrels = {"q": {"10": 1, "9": 0, "a": 2, "b": -1, "r": 1}}  # "r" is never retrieved
    run = {"q": {"10": 1.0, "9": 1.0, "b": 3.0, "a": 0.5, "x": 2.0}}
    # trec_eval order: b (3.0), x (2.0), then the tie 9 > 10 by docid, then a
    # gains: b -1 -> 0, x unjudged 0, 9 -> 0, 10 -> 1 at rank 4, a -> 2 at rank 5
    m = rank_metrics(run, qrels, ks=(3, 5))
    dcg5 = 1 / np.log2(5) + 2 / np.log2(6)
    idcg5 = 2 / np.log2(2) + 1 / np.log2(3) + 1 / np.log2(4)
    assert m["ndcg@5"][0] == pytest.approx(dcg5 / idcg5, abs=1e-15)
    assert m["mrr@3"][0] == 0.0 and m["mrr@5"][0] == 0.25
    assert m["recall@5"][0] == pytest.approx(2 / 3)  # r is relevant but never retrieved


def test_bad_cutoff():
    with pytest.raises(InputError, match="cut-offs must be integers >= 1"):
        rank_metrics({}, {"q": {"a": 1}}, ks=(0,))


def _experiment(run: dict, qrels: dict, max_grade: int) -> dict[str, float]:
    """The experiment's own arithmetic (cheat_at_search eval.grade_results and
    search.run_strategy), in pandas: results at rank <= 10 merged with the judgments, gain
    2**grade - 1 over log2(2**rank), summed per query over one ideal for all."""
    import pandas as pd

    rows = [(qid, d, rank) for qid, docs in run.items()
            for rank, d in enumerate(sorted(docs, key=lambda d: (-docs[d], d)), 1)]
    results = pd.DataFrame(rows, columns=["query_id", "doc_id", "rank"])
    judgments = pd.DataFrame([(q, d, g) for q, labels in qrels.items()
                              for d, g in labels.items()],
                             columns=["query_id", "doc_id", "grade"])
    graded = results[results["rank"] <= 10].merge(judgments, on=["query_id", "doc_id"],
                                                  how="left")
    graded["grade"] = graded["grade"].fillna(0)
    graded["discounted_gain"] = (2 ** graded["grade"] - 1) / np.log2(2 ** graded["rank"])
    idcg = np.sum((2 ** max_grade - 1) / np.log2(2 ** np.arange(1, 11)))
    return (graded.groupby("query_id")["discounted_gain"].sum() / idcg).to_dict()


def test_experiment_ndcg_hand_computed():
    """The issue's example: the only Exact product (WANDS grade 2) at rank 2 scores 0.631 in
    trec_eval's NDCG@10 and 0.171 in the experiment's; two rankings can change order."""
    run = {"q": {"other": 2.0, "exact": 1.0}}
    qrels = {"q": {"exact": 2}}
    assert round(float(rank_metrics(run, qrels, ks=[10])["ndcg@10"][0]), 3) == 0.631
    assert round(float(experiment_ndcg(run, qrels, max_grade=2)[0]), 3) == 0.171
    # A: one Exact at rank 1; B: Partials at ranks 1-3 and 5 Exacts judged elsewhere
    a = experiment_ndcg({"q": {"e": 1.0}}, {"q": {"e": 2, **{f"x{i}": 2 for i in range(9)}}},
                        max_grade=2)[0]
    b = experiment_ndcg({"q": {"p1": 3.0, "p2": 2.0, "p3": 1.0}}, {"q": {"p1": 1, "p2": 1,
                        "p3": 1}}, max_grade=2)[0]
    trec_a = rank_metrics({"q": {"e": 1.0}}, {"q": {"e": 2, **{f"x{i}": 2 for i in range(9)}}},
                          ks=[10])["ndcg@10"][0]
    trec_b = rank_metrics({"q": {"p1": 3.0, "p2": 2.0, "p3": 1.0}},
                          {"q": {"p1": 1, "p2": 1, "p3": 1}}, ks=[10])["ndcg@10"][0]
    assert a > b and trec_a < trec_b


@pytest.mark.parametrize("seed", range(5))
def test_experiment_ndcg_matches_the_experiment_on_random_rankings(seed):
    """Graded labels 0-3 (ESCI's grades), unjudged documents, queries with nothing relevant,
    distinct scores (the experiment ranks by position): equal to the experiment's formula."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(60)]
    qrels = {f"q{i}": {d: rng.choice([0, 0, 1, 2, 3]) for d in rng.sample(docs, 15)}
             for i in range(40)}
    run = {q: dict(zip(rng.sample(docs, rng.randint(1, 30)), rng.sample(range(1000), 30)))
           for q in qrels}
    ours = experiment_ndcg(run, qrels, max_grade=3, qids=list(run))
    expected = _experiment(run, qrels, max_grade=3)
    np.testing.assert_allclose(ours, [expected[q] for q in run], rtol=0, atol=1e-12)
