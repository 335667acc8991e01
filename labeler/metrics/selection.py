"""Set metrics of a passage selection, as the LLM-specific utility paper evaluates them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SelectionScores:
    """Per-query values (NaN where a value does not apply) and their summary."""

    qids: list[str]
    precision: np.ndarray  # |S∩G| / |S|, 0 for an empty selection; NaN when G is empty
    recall: np.ndarray  # |S∩G| / |G|; NaN when G is empty
    f1: np.ndarray  # per-query harmonic mean of the two above; NaN when G is empty
    accuracy: np.ndarray  # 1 iff nothing is selected; only for queries whose G is empty

    def per_query(self) -> dict[str, np.ndarray]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "accuracy": self.accuracy}

    def summary(self) -> dict[str, float]:
        """P̄ and R̄ over non-empty-gold queries, F1 = 2·P̄·R̄/(P̄+R̄), mean per-query F1, and
        the accuracy on empty-gold queries (NaN when there are none)."""
        p, r = _mean(self.precision), _mean(self.recall)
        f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
        return {
            "precision": p,
            "recall": r,
            "f1": f1 if np.isfinite(p) else float("nan"),
            "mean_f1": _mean(self.f1),
            "empty_gold_accuracy": _mean(self.accuracy),
        }

    def counts(self) -> dict[str, int]:
        gold = int(np.count_nonzero(~np.isnan(self.precision)))
        return {"queries_with_gold": gold, "queries_empty_gold": len(self.qids) - gold}


def selection_metrics(
    selected: Mapping[str, Iterable[str]],
    gold: Mapping[str, Iterable[str]],
    *,
    qids: Sequence[str] | None = None,
) -> SelectionScores:
    """Score selections S_q against gold sets G_q; ids compare as strings, duplicates count once.

    Over queries with non-empty G_q: P_q = |S∩G| / |S| (0 when S is empty), R_q = |S∩G| / |G|,
    F1 = 2·P̄·R̄ / (P̄ + R̄) (0 when both are 0). A query with empty G_q is scored apart:
    accuracy 1 iff S is empty. `qids` defaults to the queries of `gold`; a query absent from
    `selected` scores 0 everywhere, its accuracy included.

    >>> s = selection_metrics({"q1": ["a", "b", "b"], "q2": []}, {"q1": ["a"], "q2": []})
    >>> s.summary()["precision"], s.summary()["recall"], s.summary()["empty_gold_accuracy"]
    (0.5, 1.0, 1.0)
    """
    qids = list(gold) if qids is None else list(qids)
    n = len(qids)
    precision, recall, f1, accuracy = (np.full(n, np.nan) for _ in range(4))
    for i, qid in enumerate(qids):
        g = set(map(str, gold.get(qid, ())))
        chosen = selected.get(qid)
        s = set(map(str, chosen)) if chosen is not None else None
        if not g:
            accuracy[i] = 1.0 if s is not None and not s else 0.0
            continue
        hit = len(s & g) if s else 0
        precision[i] = hit / len(s) if s else 0.0
        recall[i] = hit / len(g)
        f1[i] = 2 * hit / (len(s) + len(g)) if s else 0.0
    return SelectionScores(qids, precision, recall, f1, accuracy)


def _mean(values: np.ndarray) -> float:
    """Mean over the values that apply; NaN when none does."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else float("nan")
