"""SEER's helpfulness expert: s_h = σ(log P(a | q ⊕ e) − log P(a | q)) with the generator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from labeler.lazy import LazyModule
from labeler.llm.base import LoglikelihoodRequest, chat

if TYPE_CHECKING:
    from labeler.llm.calls import Calls
    from labeler.metrics.seer.extraction import Extraction

#: imported on first use, so that reading this module (`build --help` does) stays cheap
np = LazyModule("numpy")

#: Answering with the evidence: log P(a | q ⊕ e).
WITH_EVIDENCE = (
    "Evidence: {evidence}\n"
    "Answer the following question based on the given evidence with one or few words.\n"
    "Question: {question}"
)
#: Answering closed-book: log P(a | q).
WITHOUT_EVIDENCE = "Answer the following question with one or few words.\nQuestion: {question}"
#: how helpfulness is computed, for the manifest (it always uses the generator)
HELPFULNESS = "loglikelihood-gain"


def helpfulness(llm: Calls, items: Sequence[Extraction]) -> np.ndarray:
    """σ(log P(a | q ⊕ e) − log P(a | q)) per item: above 0.5 iff the evidence makes the gold
    answer more likely. One batched call; a closed-book request several items share is asked
    once (`Calls` dedups).

    E.g. log P(a | q ⊕ e) = −1 and log P(a | q) = −3 give σ(2) ≈ 0.881.
    """
    if not items:
        return np.zeros(0)
    requests = [
        LoglikelihoodRequest(chat(WITH_EVIDENCE.format(evidence=x.evidence, question=x.question)),
                             x.answer)
        for x in items
    ] + [LoglikelihoodRequest(chat(WITHOUT_EVIDENCE.format(question=x.question)), x.answer)
         for x in items]
    names = [x.name for x in items] * 2
    scores = np.array(llm.loglikelihood(requests, "helpfulness", names), dtype=np.float64)
    return sigmoid(scores[: len(items)] - scores[len(items):])


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^−x), elementwise, without overflow for any finite x.

    >>> sigmoid(np.array([0.0, 800.0, -800.0])).tolist()
    [0.5, 1.0, 0.0]
    """
    x = np.asarray(x, dtype=np.float64)
    z = np.exp(-np.abs(x))  # in (0, 1]: never overflows
    return np.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))
