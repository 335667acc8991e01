"""SEER's three experts as one bundle, and the CoV weights that combine their scores.

Used by `labeler score` on extraction submissions and by the SEER task on sampled extractions.
Every LLM call goes through `Calls` (batched, asked once, cached), one call per kind of
request; each expert returns one float per item, as a numpy array: faithfulness,
helpfulness and conciseness, each in its module of labeler.metrics.seer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from labeler.lazy import LazyModule
from labeler.metrics.seer.conciseness import FULL_ANSWER, conciseness, load_sbert
from labeler.metrics.seer.faithfulness import (
    ANSWER_PREFIX,
    DEFAULT_FAITHFULNESS,
    FAITHFULNESS,
    Faithfulness,
    load_faithfulness,
)
from labeler.metrics.seer.helpfulness import (
    HELPFULNESS,
    WITH_EVIDENCE,
    WITHOUT_EVIDENCE,
    helpfulness,
)

if TYPE_CHECKING:
    from labeler.llm.calls import Calls
    from labeler.metrics.seer.extraction import Extraction
    from labeler.retrieval.dense import Encoder

#: imported on first use, so that reading this module (`build --help` does) stays cheap
np = LazyModule("numpy")

#: Every prompt template the experts use, by name, for manifests and cache keys.
TEMPLATES = {
    "helpfulness_with_evidence": WITH_EVIDENCE,
    "helpfulness_without_evidence": WITHOUT_EVIDENCE,
    "faithfulness": FAITHFULNESS,
    "answer_prefix": ANSWER_PREFIX,
    "full_answer": FULL_ANSWER,
}
#: the experts' names, in the order `Experts.score` gives them
EXPERTS = ("faithfulness", "helpfulness", "conciseness")
#: each expert's lowest score: a probability, a sigmoid, a cosine; what blank evidence gets
FLOORS = {"faithfulness": 0.0, "helpfulness": 0.0, "conciseness": -1.0}


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
