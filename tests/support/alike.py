"""Two utility builds of the same queries by two backends of one model: the same answers and
labels, and log-likelihoods within a tolerance (float32 kernels differ in their last bits)."""

from __future__ import annotations

#: the largest difference allowed between two backends' log-likelihoods of one answer
LOGLIKELIHOOD_TOLERANCE = 2e-3


def assert_labelled_alike(first: list[dict], second: list[dict], queries: int, k: int) -> None:
    """`queries` utility records of `k` candidates each, the same queries, answers and labels,
    every candidate's log-likelihood within LOGLIKELIHOOD_TOLERANCE."""
    assert [r["qid"] for r in first] == [r["qid"] for r in second] and len(first) == queries
    gaps = []
    for a, b in zip(first, second):
        for field in ("known", "closed_book_answer", "closed_book_capped", "utility_pids", "rag"):
            assert a[field] == b[field], (a["qid"], field)
        for x, y in zip(a["candidates"], b["candidates"], strict=True):
            for field in ("pid", "answer", "capped", "correct", "utility"):
                assert x[field] == y[field], (a["qid"], x["pid"], field)
            gaps.append(abs(x["loglikelihood"] - y["loglikelihood"]))
    assert len(gaps) == queries * k and max(gaps) < LOGLIKELIHOOD_TOLERANCE, gaps
