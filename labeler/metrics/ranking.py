"""Ranking metrics exactly as trec_eval (and so pytrec_eval) computes them, vectorised."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from labeler.errors import InputError

#: trec_eval's default relevance level: a document is relevant iff its label is >= 1.
RELEVANT = 1


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
    pids, scores, labels, counts, n_rel, ideal = [], [], [], [], [], []
    for qid in qids:
        docs = run.get(qid) or {}
        judged = qrels.get(qid) or {}
        pids.extend(docs)
        scores.extend(docs.values())
        labels.extend([judged.get(p, 0) for p in docs])
        counts.append(len(docs))
        positive = sorted((g for g in judged.values() if g > 0), reverse=True)
        n_rel.append(sum(g >= RELEVANT for g in positive))
        ideal.append(positive[: ks[-1]])

    counts = np.asarray(counts, dtype=np.int64)
    qidx = np.repeat(np.arange(nq), counts)
    order = _trec_order(qidx, np.asarray(scores, dtype=np.float64), pids)
    label = np.asarray(labels, dtype=np.float64)[order]
    pos = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
    gain = np.maximum(label, 0.0) / np.log2(pos + 2.0)
    relevant = label >= RELEVANT
    n_rel = np.asarray(n_rel, dtype=np.float64)
    idcg = _ideal_dcg(ideal, ks)

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


def _trec_order(qidx: np.ndarray, scores: np.ndarray, pids: list[str]) -> np.ndarray:
    """Indices sorting by query, then score descending, then docid descending (trec_eval)."""
    order = np.lexsort((-scores, qidx))
    s, q = scores[order], qidx[order]
    same = (s[1:] == s[:-1]) & (q[1:] == q[:-1])
    if not same.any():
        return order
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    members = order[tied]
    # Rank only the tied docids by string order; everyone else is already placed.
    _, inverse = np.unique(np.array([pids[i] for i in members]), return_inverse=True)
    docid_key = np.zeros(len(order), dtype=np.int64)
    docid_key[members] = -inverse.reshape(-1)
    return np.lexsort((docid_key, -scores, qidx))


def _ideal_dcg(ideal: list[list[int]], ks: list[int]) -> dict[int, np.ndarray]:
    """IDCG@k per query from its positive labels sorted descending."""
    counts = np.fromiter((len(g) for g in ideal), dtype=np.int64, count=len(ideal))
    qidx = np.repeat(np.arange(len(ideal)), counts)
    gains = np.fromiter((g for gs in ideal for g in gs), dtype=np.float64, count=int(counts.sum()))
    pos = np.arange(len(gains)) - np.repeat(np.cumsum(counts) - counts, counts)
    gains = gains / np.log2(pos + 2.0)
    return {
        k: np.bincount(qidx[pos < k], weights=gains[pos < k], minlength=len(ideal)) for k in ks
    }
