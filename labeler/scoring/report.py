"""A submission's scores: the summary, the per-query rows, and paired tests against a
baseline.

The summary's rows (`Report.summary`, `metrics` in JSON), by kind:
- selection: `precision`, `recall`, `f1` (2·P̄·R̄/(P̄+R̄), the paper's Table 4), `mean_f1`,
  `empty_gold_accuracy`;
- ranking: `ndcg@k`, `mrr@k`, `recall@k` per cut-off (Table 5's NDCG@5), NaN-free queries only
  (with --rag, the empty-gold queries are NaN there, left out as without it);
- extraction: labeler.metrics.extraction's, and with --rag `rag_em` or `rag_f1`;
- with --rag on a selection or ranking against a utility artifact (Table 6, Figure 4):
  `rag_accuracy` (the submission's passages), `rag_all_accuracy` (the artifact's answers with
  all its candidates) and `rag_utilitarian_accuracy` (with its gold utilitarian passages),
  each also as `<row>_known` and `<row>_unknown` over the known / unknown queries, counted in
  `counts` as `known_queries` / `unknown_queries`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from labeler.errors import InputError
from labeler.metrics.selection import SelectionScores
from labeler.metrics.significance import PairedTest, paired_t_test
from labeler.paths import atomic_file


@dataclass
class Report:
    """The scores of one submission; `tests` compare it with `baseline`, query by query."""

    kind: str
    submission: str
    reference: str
    qids: list[str]  # the scored queries
    missing: list[str]  # reference queries the submission lacks
    per_query: dict[str, np.ndarray]  # metric -> value per scored query (NaN: does not apply)
    summary: dict[str, float]
    counts: dict[str, int]
    skipped: list[InputError] = field(default_factory=list)  # bad lines skipped (--lenient)
    baseline: Report | None = None
    tests: dict[str, PairedTest] = field(default_factory=dict)
    #: SEER's Table 1 (an extraction with --rag): {metric, header, queries, rows: [{method,
    #: evidence, <metric>, tokens}]}, labeler.scoring.evidence_qa
    qa: dict | None = None
    #: the reference's own values per scored query, beside the submission's and never tested
    #: against a baseline's (--rag: the artifact's `rag_all_accuracy`, ...)
    reference_per_query: dict[str, np.ndarray] = field(default_factory=dict)
    dataset: str | None = None  # the reference artifact's dataset, when it names one
    #: how `missing` counted: "zero" (scored 0), "skip" (left out), or, for an Overall over
    #: datasets that differ, "mixed"
    missing_rule: str = "zero"

    def as_dict(self) -> dict:
        """JSON-ready: NaN becomes null."""
        out = {
            "kind": self.kind,
            "submission": self.submission,
            "reference": self.reference,
            "dataset": self.dataset,
            "missing_rule": self.missing_rule,
            "counts": self.counts,
            "metrics": _clean(self.summary),
        }
        if self.qa is not None:
            out["qa"] = self.qa
        if self.baseline is not None:
            out["baseline"] = {
                "submission": self.baseline.submission,
                "counts": self.baseline.counts,
                "metrics": _clean(self.baseline.summary),
                "tests": {name: _clean(t.as_dict()) for name, t in self.tests.items()},
            }
        return out

    def rows(self) -> list[dict]:
        """One dict per scored query: qid, whether it was missing, each metric."""
        missing = set(self.missing)
        columns = [*self.per_query.items(), *self.reference_per_query.items()]
        return [
            {"qid": qid, "missing": qid in missing,
             **_clean({name: float(values[i]) for name, values in columns})}
            for i, qid in enumerate(self.qids)
        ]


#: a selection's per-query columns that its summary reads (SelectionScores' fields)
SELECTION_COLUMNS = ("precision", "recall", "f1", "accuracy")


def summarize(kind: str, per_query: dict[str, np.ndarray]) -> dict[str, float]:
    """The summary of per-query columns: for a selection, SelectionScores' (P̄, R̄, F1 of the
    two, mean F1, empty-gold accuracy); every other column's mean over the queries where it
    applies (not NaN), NaN when it applies nowhere."""
    rest = dict(per_query)
    summary: dict[str, float] = {}
    if kind == "selection" and all(name in rest for name in SELECTION_COLUMNS):
        summary = SelectionScores([], *(rest.pop(name) for name in SELECTION_COLUMNS)).summary()
    for name, values in rest.items():
        kept = values[~np.isnan(values)]
        summary[name] = float(kept.mean()) if kept.size else math.nan
    return summary


def paired_tests(a: Report, b: Report) -> dict[str, PairedTest]:
    """Per metric, a paired t-test over the queries both reports scored."""
    where_b = {q: i for i, q in enumerate(b.qids)}
    both = [(i, where_b[q]) for i, q in enumerate(a.qids) if q in where_b]
    ia = np.array([i for i, _ in both], dtype=np.int64)
    ib = np.array([j for _, j in both], dtype=np.int64)
    return {name: paired_t_test(values[ia], b.per_query[name][ib])
            for name, values in a.per_query.items()}


def write_per_query(report: Report, path: str | Path) -> None:
    """Write the per-query rows as JSONL, atomically (a temp file renamed into place)."""
    with atomic_file(path) as f:
        for row in report.rows():
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _clean(values: dict) -> dict:
    """`values` with every NaN or infinite float as None (null in JSON)."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in values.items()}
