"""The "Overall" column of the utility paper's Tables 4–6: one kind of submission's reports on
several datasets pooled into one report over all their queries.

The paper pools queries; it does not average datasets. Table 5's Overall is not the mean of
its six dataset columns (Llama3.1-8B, initial retrieval: mean 53.98, Overall 52.29), while the
dataset weights that reproduce all five Overall values of one LLM's block are positive and
close to the datasets' shares of queries (Llama3.1-8B: NQ .10, HotpotQA .15, 2Wiki .35,
TriviaQA .10, MS MARCO-FQA .12, FEVER .18; Table 1's shares .07, .14, .32, .13, .08, .26, less
the empty-gold queries that NDCG leaves out). So a mean is over every query where it applies,
and F1 is 2·P̄·R̄/(P̄+R̄) of P̄ and R̄ over every query with gold, as for one dataset.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from labeler.errors import InputError
from labeler.scoring.report import Report, paired_tests, summarize

OVERALL = "Overall"


def overall(reports: Sequence[Report], *, name: str = OVERALL) -> Report:
    """One report over every query of `reports` (one kind, each against its own reference):
    per-query columns concatenated, qids as `<dataset>/<qid>` (`<reference>/<qid>` where
    the datasets do not tell the reports apart), the summary recomputed from them (`summarize`), counts added up; the
    baselines pooled alike and paired-tested over the pooled queries when every report has
    one. InputError for no reports, mixed kinds, a reference twice, or different columns
    (one scored with --rag, another without).

    >>> a = Report("ranking", "lvr.jsonl", "nq", ["q1"], [], {"ndcg@5": np.array([1.0])},
    ...            {}, {"queries": 1})
    >>> b = Report("ranking", "lvr.jsonl", "tq", ["q1", "q2"], [],
    ...            {"ndcg@5": np.array([0.5, 0.0])}, {}, {"queries": 2})
    >>> pooled = overall([a, b])
    >>> pooled.summary["ndcg@5"], pooled.counts["queries"], pooled.qids
    (0.5, 3, ['nq/q1', 'tq/q1', 'tq/q2'])
    """
    _check(reports)
    first = reports[0]
    per_query = _pooled([r.per_query for r in reports])
    given = _pooled([r.reference_per_query for r in reports])
    counts: dict[str, int] = {}
    for report in reports:
        for key, count in report.counts.items():
            counts[key] = counts.get(key, 0) + count
    label = [r.dataset for r in reports]
    if None in label or len(set(label)) < len(label):  # e.g. two LLMs' artifacts of one dataset
        label = [r.reference for r in reports]
    pooled = Report(
        first.kind, name, ", ".join(label),
        [f"{where}/{q}" for where, r in zip(label, reports) for q in r.qids],
        [f"{where}/{q}" for where, r in zip(label, reports) for q in r.missing],
        per_query, summarize(first.kind, per_query) | summarize(first.kind, given), counts,
        [e for r in reports for e in r.skipped], reference_per_query=given, dataset=name,
        missing_rule=_rule(reports))
    if all(r.baseline is not None for r in reports):
        pooled.baseline = overall([r.baseline for r in reports], name=name)
        pooled.tests = paired_tests(pooled, pooled.baseline)
    return pooled


def _rule(reports: Sequence[Report]) -> str:
    """The --missing rule the pooled queries followed: each report's, "mixed" where they
    differ (an artifact's default zero beside qrels' skip)."""
    rules = {r.missing_rule for r in reports}
    return rules.pop() if len(rules) == 1 else "mixed"


def _check(reports: Sequence[Report]) -> None:
    if not reports:
        raise InputError("an Overall row pools at least one report: none given")
    kinds = sorted({r.kind for r in reports})
    if len(kinds) > 1:
        raise InputError(f"an Overall row pools one kind of submission, got {' and '.join(kinds)}")
    seen: set[str] = set()
    for report in reports:
        if report.reference in seen:
            raise InputError("an Overall row pools each dataset once: this reference is given "
                             "twice", report.reference, field_name="against")
        seen.add(report.reference)
    columns = [sorted(r.per_query) + sorted(r.reference_per_query) for r in reports]
    for report, names in zip(reports, columns):
        if names != columns[0]:
            raise InputError(f"its scores ({', '.join(names)}) are not those of "
                             f"{reports[0].reference} ({', '.join(columns[0])}): score every "
                             "dataset with the same options", report.reference)


def _pooled(columns: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Each column's values of every report, one after the other."""
    return {name: np.concatenate([c[name] for c in columns]) for name in columns[0]}
