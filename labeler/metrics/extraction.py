"""Metrics of extracted evidence: length, answer coverage and, given an LLM, SEER's experts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from labeler.llm.base import Backend
from labeler.metrics.answers import has_answer
from labeler.metrics.experts import Extraction, faithfulness, helpfulness


def extraction_metrics(
    evidence: Sequence[str | None],
    *,
    questions: Sequence[str],
    answers: Sequence[Sequence[str]],
    passages: Sequence[Sequence[str]],
    backend: Backend | None = None,
) -> dict[str, np.ndarray]:
    """Per-query ``tokens``, ``answer_coverage`` and, with a backend, ``helpfulness`` and
    ``faithfulness`` (see labeler.metrics.experts); parallel sequences, one item a query.

    tokens = evidence length in the backend's tokens, else in whitespace-separated words;
    answer_coverage = 1 iff some gold answer occurs in the evidence (has_answer). Helpfulness
    uses the first gold answer. Evidence None (a query not submitted) scores 0 everywhere.

    >>> m = extraction_metrics(["Paris is in France."], questions=["Capital of France?"],
    ...                        answers=[["Paris"]], passages=[["Paris is the capital."]])
    >>> float(m["tokens"][0]), float(m["answer_coverage"][0])
    (4.0, 1.0)
    """
    present = [i for i, e in enumerate(evidence) if e is not None]
    texts = [evidence[i] for i in present]
    out = {name: np.zeros(len(evidence)) for name in _names(backend)}
    out["tokens"][present] = token_counts(texts, backend)
    out["answer_coverage"][present] = [float(has_answer(t, answers[i])) for t, i in
                                       zip(texts, present)]
    if backend is not None and present:
        items = [Extraction(questions[i], answers[i][0], evidence[i], tuple(passages[i]))
                 for i in present]
        out["helpfulness"][present] = helpfulness(backend, items)
        out["faithfulness"][present] = faithfulness(backend, items)
    return out


def token_counts(texts: Sequence[str], backend: Backend | None = None) -> np.ndarray:
    """Length of each text in the backend's tokens (`Backend.count_tokens`: no special
    tokens), else in whitespace-separated words."""
    if backend is None:
        return np.array([len(t.split()) for t in texts], dtype=np.float64)
    return np.array(backend.count_tokens(list(texts)), dtype=np.float64)


def _names(backend: Backend | None) -> list[str]:
    base = ["tokens", "answer_coverage"]
    return base + ["helpfulness", "faithfulness"] if backend is not None else base
