"""Score fusion: a first-stage retrieval score (BM25) raised by a weighted second-stage score (an
LLM's), as the bag-of-decisions reranker fuses them, so that documents the LLM did not score
keep their first-stage order."""

from __future__ import annotations


def linear_fusion(first: float, second: float | None, weight: float) -> float:
    """first + weight · second; `first` alone when there is no second score.

    >>> linear_fusion(12.5, 2.0, 10.0), linear_fusion(12.5, None, 10.0)
    (32.5, 12.5)
    """
    return first if second is None else first + weight * second


def counted(p: float, threshold: float | None) -> float:
    """What one probability adds to a summed score: p, or 0 when not above `threshold`.

    >>> counted(0.4, 0.5), counted(0.7, 0.5), counted(0.4, None)
    (0.0, 0.7, 0.4)
    """
    return p if threshold is None or p > threshold else 0.0
