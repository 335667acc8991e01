"""Metrics of extracted evidence: length, answer coverage and, given an LLM, SEER's experts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from labeler.llm.base import Backend
from labeler.metrics.answers import has_answer
from labeler.metrics.seer.experts import EXPERTS, FLOORS, cov_weights
from labeler.metrics.seer.extraction import Extraction

if TYPE_CHECKING:
    from labeler.metrics.seer.experts import Experts


def extraction_metrics(
    evidence: Sequence[str | None],
    *,
    questions: Sequence[str],
    answers: Sequence[Sequence[str]],
    passages: Sequence[Sequence[str]],
    qids: Sequence[str] | None = None,
    backend: Backend | None = None,
    experts: Experts | None = None,
    weights: dict[str, float] | None = None,
) -> dict[str, np.ndarray]:
    """Per-query ``tokens``, ``answer_coverage`` and, with experts (which need the backend),
    ``faithfulness``, ``helpfulness`` and ``conciseness`` (see labeler.metrics.seer);
    parallel sequences, one item a query, `qids` naming each in an error.

    tokens = evidence length in the backend's tokens, else in whitespace-separated words;
    answer_coverage = 1 iff some gold answer occurs in the evidence (has_answer). The experts
    use the first gold answer and the backend as the generator, through one `Calls`; with
    them, ``weighted`` = Σ α·score with SEER's CoV weights `weights` (a SEER artifact's), else
    with the CoV weights of these extractions' own scores (τ = 1). Evidence None (a query not
    submitted) scores 0 everywhere; blank evidence (whitespace only) is not shown to the
    experts and gets each one's floor (`FLOORS`), so that no judge rewards saying nothing.

    >>> m = extraction_metrics(["Paris is in France."], questions=["Capital of France?"],
    ...                        answers=[["Paris"]], passages=[["Paris is the capital."]])
    >>> float(m["tokens"][0]), float(m["answer_coverage"][0])
    (4.0, 1.0)
    """
    if experts is not None and backend is None:
        raise TypeError("the experts need a backend: the generator they score with")
    present = [i for i, e in enumerate(evidence) if e is not None]
    texts = [evidence[i] for i in present]
    names = ["tokens", "answer_coverage"] + (list(EXPERTS) if experts is not None else [])
    out = {name: np.zeros(len(evidence)) for name in names}
    out["tokens"][present] = token_counts(texts, backend)
    out["answer_coverage"][present] = [float(has_answer(t, answers[i])) for t, i in
                                       zip(texts, present)]
    if experts is not None and present:
        from labeler.llm.calls import Calls

        said = [i for i in present if evidence[i].strip()]
        for name in EXPERTS:
            out[name][[i for i in present if not evidence[i].strip()]] = FLOORS[name]
        items = [Extraction(questions[i], answers[i][0], evidence[i], tuple(passages[i]),
                            qid="" if qids is None else qids[i]) for i in said]
        scores = experts.score(Calls(backend), items)
        for name, values in scores.items():
            out[name][said] = values
        weights = weights or cov_weights({n: v.tolist() for n, v in scores.items()},
                                         tau=1.0)["weights"]
        out["weighted"] = sum(weights[n] * out[n] for n in EXPERTS)
    return out


def token_counts(texts: Sequence[str], backend: Backend | None = None) -> np.ndarray:
    """Length of each text in the backend's tokens (`Backend.count_tokens`: no special
    tokens), else in whitespace-separated words."""
    if backend is None:
        return np.array([len(t.split()) for t in texts], dtype=np.float64)
    return np.array(backend.count_tokens(list(texts)), dtype=np.float64)
