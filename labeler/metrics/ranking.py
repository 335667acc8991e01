"""Ranking metrics exactly as trec_eval (and so pytrec_eval) computes them, vectorised."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat

from labeler.errors import InputError
from labeler.lazy import LazyModule

#: imported on first use, so that reading this module (`build --help` does) stays cheap
np = LazyModule("numpy")

#: trec_eval's default relevance level: a document is relevant iff its label is >= 1.
RELEVANT = 1
#: the name of the rubric experiment's NDCG (`experiment_ndcg`), beside trec_eval's ndcg@10
EXPERIMENT_NDCG = "ndcg@10 (cheat_at_search)"


def rank_metrics(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    ks: Sequence[int] = (5, 10),
    qids: Sequence[str] | None = None,
) -> dict[str, np.ndarray]:
    """Per-query ``ndcg@k``, ``mrr@k`` and ``recall@k`` for every k, in the order of `qids`.

    Identical to trec_eval's ``ndcg_cut_k``, ``recip_rank`` on the run cut to its top k, and
    ``recall_k``:

    - documents are ordered by score descending, ties by docid descending (string order);
    - gain = the label (negative labels count 0, unjudged documents count 0);
      NDCG@k = Σ_{i<k} gain_i / log2(i + 2) / IDCG@k, with IDCG from *all* judged documents
      of the query, retrieved or not; 0 when the query has no positive label;
    - relevant means label >= 1; MRR@k = 1 / rank of the first relevant document within the
      top k (0 if none); Recall@k = relevant in the top k / all relevant judged (0 if none).

    `run` maps qid -> {docid: score} (float64, finite), `qrels` qid -> {docid: label}.
    `qids` defaults to the queries of `qrels`; a query absent from `run` scores 0 everywhere
    (trec_eval's ``-c``).

    >>> m = rank_metrics({"q": {"a": 0.5, "b": 0.5}}, {"q": {"a": 1}}, ks=[1])
    >>> float(m["mrr@1"][0]), float(m["ndcg@1"][0])
    (0.0, 0.0)
    """
    qids = list(qrels) if qids is None else list(qids)
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise InputError(f"cut-offs must be integers >= 1, got {ks}", field_name="k")
    nq = len(qids)
    pids, scores, labels, counts, judged_labels, judged_counts = _flatten(run, qrels, qids)
    qidx, pos = _blocks(counts)
    order = _trec_order(qidx, np.asarray(scores, dtype=np.float64), pids)
    label = np.asarray(labels, dtype=np.float64)[order]
    gain = np.maximum(label, 0.0) / np.log2(pos + 2.0)
    relevant = label >= RELEVANT
    idcg, n_rel = _ideal(np.asarray(judged_labels, dtype=np.float64), judged_counts, ks)

    out: dict[str, np.ndarray] = {}
    for k in ks:
        top = pos < k
        dcg = np.bincount(qidx[top], weights=gain[top], minlength=nq)
        out[f"ndcg@{k}"] = np.divide(dcg, idcg[k], out=np.zeros(nq), where=idcg[k] > 0)
        hit = top & relevant
        rank = np.zeros(nq)
        first_q, first_i = np.unique(qidx[hit], return_index=True)
        rank[first_q] = pos[hit][first_i] + 1.0
        out[f"mrr@{k}"] = np.divide(1.0, rank, out=np.zeros(nq), where=rank > 0)
        found = np.bincount(qidx[hit], minlength=nq).astype(np.float64)
        out[f"recall@{k}"] = np.divide(found, n_rel, out=np.zeros(nq), where=n_rel > 0)
    return {f"{m}@{k}": out[f"{m}@{k}"] for m in ("ndcg", "mrr", "recall") for k in ks}


def experiment_ndcg(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    max_grade: int,
    k: int = 10,
    qids: Sequence[str] | None = None,
) -> np.ndarray:
    """Per-query NDCG@k as the bag-of-decisions experiment scores it (cheat_at_search's
    ``eval.grade_results`` and ``search.run_strategy``), in the order of `qids`.

    The run's top k in trec_eval's order; gain 2^label − 1 (unjudged and negative labels
    count 0), discount 1/rank (its ``1/log2(2**rank)``); one ideal for every query, k results
    of `max_grade` (the top grade of the whole dataset's judgments):
    IDCG = (2^max_grade − 1) · Σ_{i≤k} 1/i. A query without a relevant judgment is not
    skipped: it scores its DCG (0).

    >>> round(float(experiment_ndcg({"q": {"a": 2.0, "b": 1.0}}, {"q": {"b": 2}},
    ...                             max_grade=2)[0]), 3)
    0.171
    """
    qids = list(qrels) if qids is None else list(qids)
    if k < 1 or max_grade < 1:
        raise InputError(f"the cut-off and the top grade must be >= 1, got k={k}, "
                         f"max_grade={max_grade}", field_name="k")
    pids, scores, labels, counts, _, _ = _flatten(run, qrels, qids)
    qidx, pos = _blocks(counts)
    order = _trec_order(qidx, np.asarray(scores, dtype=np.float64), pids)
    label = np.maximum(np.asarray(labels, dtype=np.float64)[order], 0.0)
    top = pos < k
    dcg = np.bincount(qidx[top], weights=(2.0 ** label[top] - 1.0) / (pos[top] + 1.0),
                      minlength=len(qids))
    return dcg / ((2.0 ** max_grade - 1.0) * np.sum(1.0 / np.arange(1, k + 1)))


def _flatten(run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]],
             qids: list[str]) -> tuple[list, list, list, list[int], list, list[int]]:
    """The run's and the qrels' entries laid out query after query, in the order of `qids`:
    (docids, scores, their labels (0 unjudged), docs per query, judged labels, judged per
    query)."""
    pids, scores, labels, counts, judged_labels, judged_counts = [], [], [], [], [], []
    for qid in qids:
        docs = run.get(qid) or {}
        judged = qrels.get(qid) or {}
        pids.extend(docs)
        scores.extend(docs.values())
        labels.extend(map(judged.get, docs, repeat(0)))
        counts.append(len(docs))
        judged_labels.extend(judged.values())
        judged_counts.append(len(judged))
    return pids, scores, labels, counts, judged_labels, judged_counts


def _blocks(counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """For items laid out query after query: each one's query index and position in its query."""
    counts = np.asarray(counts, dtype=np.int64)
    qidx = np.repeat(np.arange(len(counts)), counts)
    return qidx, np.arange(len(qidx)) - np.repeat(np.cumsum(counts) - counts, counts)


def _trec_order(qidx: np.ndarray, scores: np.ndarray, pids: list[str]) -> np.ndarray:
    """Indices sorting by query, then score descending, then docid descending (trec_eval)."""
    levels, level = np.unique(-scores, return_inverse=True)
    key = qidx * (len(levels) + 1) + level.reshape(-1)  # one int key: (query, -score)
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    same = sorted_key[1:] == sorted_key[:-1]
    if not same.any():
        return order
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    members = order[at]
    # Reorder only the tied runs, by docid descending, within the places they hold.
    _, docid = np.unique(np.array([pids[i] for i in members]), return_inverse=True)
    order[at] = members[np.lexsort((-docid.reshape(-1), sorted_key[at]))]
    return order


def _ideal(labels: np.ndarray, counts: list[int], ks: list[int]) -> tuple[dict, np.ndarray]:
    """IDCG@k per query from all its judged labels, and its number of relevant documents."""
    qidx, _ = _blocks(counts)
    nq = len(counts)
    n_rel = np.bincount(qidx[labels >= RELEVANT], minlength=nq).astype(np.float64)
    positive = labels > 0
    qidx, labels = qidx[positive], labels[positive]
    order = np.lexsort((-labels, qidx))
    labels = labels[order]
    _, pos = _blocks(np.bincount(qidx, minlength=nq).tolist())
    gains = labels / np.log2(pos + 2.0)
    qidx = qidx[order]
    return {k: np.bincount(qidx[pos < k], weights=gains[pos < k], minlength=nq) for k in ks}, n_rel
