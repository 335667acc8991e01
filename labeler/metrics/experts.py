"""SEER's LLM experts for extracted evidence: helpfulness and faithfulness, batched.

Used by `labeler score` on extraction submissions and by the SEER builder on sampled
extractions. Each expert takes every item at once and makes one batched backend call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from labeler.llm.base import (
    Backend,
    ChoiceRequest,
    LoglikelihoodRequest,
    Message,
    chat,
    yes_probability,
)

#: Answering with the evidence: log P(a | q ⊕ e).
WITH_EVIDENCE = (
    "Evidence: {evidence}\n"
    "Answer the following question based on the given evidence with one or few words.\n"
    "Question: {question}"
)
#: Answering closed-book: log P(a | q).
WITHOUT_EVIDENCE = "Answer the following question with one or few words.\nQuestion: {question}"
#: The faithfulness question, asked after the passages and the evidence.
FAITHFULNESS = (
    "Passages:\n{passages}\n\n"
    "Evidence: {evidence}\n\n"
    "Is every statement in the evidence supported by the passages? Answer yes or no."
)
#: The assistant turn starts with this; the next token is " yes" or " no".
ANSWER_PREFIX = "Answer:"

#: Every template above, by name, for manifests and cache keys.
TEMPLATES = {
    "helpfulness_with_evidence": WITH_EVIDENCE,
    "helpfulness_without_evidence": WITHOUT_EVIDENCE,
    "faithfulness": FAITHFULNESS,
    "answer_prefix": ANSWER_PREFIX,
}


@dataclass(frozen=True)
class Extraction:
    """One piece of evidence extracted for a question from its passages."""

    question: str
    answer: str  # the gold answer the evidence should help produce
    evidence: str
    passages: tuple[str, ...]  # the passage texts the evidence was extracted from


def helpfulness(backend: Backend, items: Sequence[Extraction]) -> np.ndarray:
    """σ(log P(a | q ⊕ e) − log P(a | q)) per item: above 0.5 iff the evidence makes the gold
    answer more likely. Closed-book requests shared by several items are asked once.

    E.g. log P(a | q ⊕ e) = −1 and log P(a | q) = −3 give σ(2) ≈ 0.881.
    """
    if not items:
        return np.zeros(0)
    with_evidence = [
        LoglikelihoodRequest(chat(WITH_EVIDENCE.format(evidence=x.evidence, question=x.question)),
                             x.answer)
        for x in items
    ]
    closed = [
        LoglikelihoodRequest(chat(WITHOUT_EVIDENCE.format(question=x.question)), x.answer)
        for x in items
    ]
    unique = list(dict.fromkeys(closed))
    scores = backend.loglikelihood(with_evidence + unique)
    baseline = dict(zip(unique, scores[len(items):]))
    gain = np.array(scores[: len(items)], dtype=np.float64) - np.array(
        [baseline[c] for c in closed], dtype=np.float64
    )
    return expit(gain)


def faithfulness(backend: Backend, items: Sequence[Extraction]) -> np.ndarray:
    """P(yes) / (P(yes) + P(no)) (`yes_probability`; 0.5 when both are 0) for "Is every
    statement in the evidence supported by the passages?", from the next-token probabilities
    after "Answer:".

    E.g. P(" yes") = 0.3 and P(" no") = 0.1 give 0.75.
    """
    if not items:
        return np.zeros(0)
    requests = [
        ChoiceRequest(
            chat(FAITHFULNESS.format(passages="\n".join(x.passages), evidence=x.evidence))
            + (Message("assistant", ANSWER_PREFIX),),
            (" yes", " no"),
        )
        for x in items
    ]
    return np.array([yes_probability(p) for p in backend.choice_probs(requests)],
                    dtype=np.float64)
