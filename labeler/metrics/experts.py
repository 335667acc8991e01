"""SEER's three experts for extracted evidence: faithfulness, helpfulness and conciseness.

Used by `labeler score` on extraction submissions and by the SEER task on sampled extractions.
Every LLM call goes through the task seam's `Calls` (batched, asked once, cached), one call
per kind of request; each expert returns one float per item, as a numpy array.

- helpfulness s_h = σ(log P(a | q ⊕ e) − log P(a | q)) with the generator;
- faithfulness s_f ∈ [0, 1], that the passages entail the evidence: pluggable, by a spec
  (`load_faithfulness`): `llm` (the offline default: the generator as judge, P(yes)),
  `alignscore[:CHECKPOINT]` (SEER's choice) or `nli:MODEL` (labeler.metrics.alignscore);
- conciseness s_c = cos(SBERT(t), SBERT(e)) ∈ [−1, 1], t the full-length answer
  (labeler.metrics.conciseness).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from labeler.errors import InputError, UnknownNameError
from labeler.lazy import load_entry
from labeler.llm.base import ChoiceRequest, LoglikelihoodRequest, Message, chat, yes_probability
from labeler.metrics.conciseness import FULL_ANSWER, conciseness, load_sbert

if TYPE_CHECKING:
    from labeler.llm.calls import Calls
    from labeler.retrieval.dense import Encoder

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

#: Every prompt template the experts use, by name, for manifests and cache keys.
TEMPLATES = {
    "helpfulness_with_evidence": WITH_EVIDENCE,
    "helpfulness_without_evidence": WITHOUT_EVIDENCE,
    "faithfulness": FAITHFULNESS,
    "answer_prefix": ANSWER_PREFIX,
    "full_answer": FULL_ANSWER,
}

#: faithfulness scorer kind -> "module:class", imported only when asked for; a class takes
#: the part of the spec after the colon (None when there is none)
FAITHFULNESS_SCORERS = {
    "llm": "labeler.metrics.experts:LLMJudge",
    "alignscore": "labeler.metrics.alignscore:AlignScore",
    "nli": "labeler.metrics.alignscore:NLIEntailment",
}
#: the offline default: it needs no model beyond the generator
DEFAULT_FAITHFULNESS = "llm"
#: how helpfulness is computed, for the manifest (it always uses the generator)
HELPFULNESS = "loglikelihood-gain"
#: the experts' names, in the order `Experts.score` gives them
EXPERTS = ("faithfulness", "helpfulness", "conciseness")


@dataclass(frozen=True)
class Extraction:
    """One piece of evidence extracted for a question from its passages."""

    question: str
    answer: str  # the gold answer the evidence should help produce
    evidence: str
    passages: tuple[str, ...]  # the passage texts the evidence was extracted from
    qid: str = ""  # names the item's requests in an error; the question when empty

    @property
    def name(self) -> str:
        return self.qid or self.question


class Faithfulness(Protocol):
    """A faithfulness scorer: `name` (its spec, for the manifest) and P(passages ⊨ evidence)
    per item; `llm` is the generator's calls, which only the LLM judge uses."""

    name: str

    def __call__(self, llm: Calls, items: Sequence[Extraction]) -> np.ndarray: ...


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


class LLMJudge:
    """Faithfulness by the generator as judge: P(yes) / (P(yes) + P(no)) (`yes_probability`;
    0.5 when both are 0) for "Is every statement in the evidence supported by the passages?",
    from the next-token probabilities after "Answer:", in one batched call. No model of its
    own: the card calls it an LLM judge, not AlignScore.

    E.g. P(" yes") = 0.3 and P(" no") = 0.1 give 0.75.
    """

    name = DEFAULT_FAITHFULNESS

    def __init__(self, argument: str | None = None) -> None:
        if argument is not None:
            raise InputError(f"the llm faithfulness judge is the generator itself and takes no "
                             f"model, got 'llm:{argument}'", field_name="faithfulness",
                             hint="use 'llm'")

    def __call__(self, llm: Calls, items: Sequence[Extraction]) -> np.ndarray:
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
        probs = llm.choice_probs(requests, "faithfulness (LLM judge)", [x.name for x in items])
        return np.array([yes_probability(p) for p in probs], dtype=np.float64)


def faithfulness_spec(spec: str) -> tuple[str, str | None]:
    """`KIND[:ARGUMENT]` -> (kind, argument or None), checked without loading anything:
    UnknownNameError for an unknown kind.

    >>> faithfulness_spec("nli:cross-encoder/nli-deberta-v3-base")
    ('nli', 'cross-encoder/nli-deberta-v3-base')
    """
    kind, colon, argument = spec.strip().partition(":")
    if kind not in FAITHFULNESS_SCORERS:
        raise UnknownNameError("faithfulness scorer", kind, list(FAITHFULNESS_SCORERS),
                               hint="alignscore[:CHECKPOINT] and nli:MODEL take a model")
    if colon and not argument:
        raise InputError(f"faithfulness '{spec}' names no model after the colon",
                         field_name="faithfulness")
    return kind, argument or None


def load_faithfulness(spec: str = DEFAULT_FAITHFULNESS) -> Faithfulness:
    """The faithfulness scorer `spec` names, its model loaded: `llm`, `alignscore[:CKPT]`
    (a .ckpt file, a folder holding one, a Hub repo or REPO/FILE.ckpt), `nli:MODEL` (a Hub
    id or local folder). UnknownNameError / InputError for a bad spec, ModelLoadError for a
    model that cannot load."""
    kind, argument = faithfulness_spec(spec)
    return load_entry(FAITHFULNESS_SCORERS[kind])(argument)


def cov_weights(scores: dict[str, Sequence[float]], tau: float) -> dict[str, dict[str, float]]:
    """SEER's smoothing CoV weighting: per criterion CoV = σ/|μ| (population σ; 0 when μ = 0)
    over all scored extractions, α = softmax(CoV/τ). Returns {"cov": ..., "weights": ...}.

    >>> w = cov_weights({"a": [1.0, 1.0], "b": [0.0, 2.0]}, tau=1.0)
    >>> w["cov"], round(w["weights"]["b"], 4)
    ({'a': 0.0, 'b': 1.0}, 0.7311)
    """
    cov = {}
    for name, values in scores.items():
        n = len(values)
        mean = sum(values) / n if n else 0.0
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / n) if n else 0.0
        cov[name] = sd / abs(mean) if mean else 0.0
    top = max(cov.values(), default=0.0)
    exp = {name: math.exp((c - top) / tau) for name, c in cov.items()}
    total = sum(exp.values())
    return {"cov": cov, "weights": {name: e / total for name, e in exp.items()}}


@dataclass
class Experts:
    """SEER's three experts, their models loaded once for a whole build or scoring run."""

    faithfulness: Faithfulness
    sbert: Encoder  # conciseness's sentence embedder

    def score(self, llm: Calls, items: Sequence[Extraction]) -> dict[str, np.ndarray]:
        """{"faithfulness", "helpfulness", "conciseness"} -> one score per item; `llm` is the
        generator's calls."""
        return {
            "faithfulness": self.faithfulness(llm, items),
            "helpfulness": helpfulness(llm, items),
            "conciseness": conciseness(llm, items, self.sbert),
        }

    def describe(self) -> dict[str, str]:
        """Each expert by name, for the manifest and card: the faithfulness spec, how
        helpfulness is computed, and the SBERT model of conciseness."""
        return {
            "faithfulness": self.faithfulness.name,
            "helpfulness": HELPFULNESS,
            "conciseness": f"sbert:{self.sbert.model_id}",
        }


def load_experts(faithfulness: str = DEFAULT_FAITHFULNESS, *, sbert: str | None = None
                 ) -> Experts:
    """The three experts: the faithfulness scorer `faithfulness` names (`load_faithfulness`)
    and the SBERT model `sbert` (default the bundled all-MiniLM-L6-v2, `load_sbert`)."""
    return Experts(load_faithfulness(faithfulness), load_sbert(sbert))

