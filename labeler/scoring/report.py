"""A submission's scores: the summary, the per-query rows, and paired tests against a
baseline."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from labeler.errors import InputError
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

    def as_dict(self) -> dict:
        """JSON-ready: NaN becomes null."""
        out = {
            "kind": self.kind,
            "submission": self.submission,
            "reference": self.reference,
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
        columns = list(self.per_query.items())
        return [
            {"qid": qid, "missing": qid in missing,
             **_clean({name: float(values[i]) for name, values in columns})}
            for i, qid in enumerate(self.qids)
        ]


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
