"""Submissions shown in `labeler view`: each scored once, when the server starts, against each
version folder being viewed, exactly as `labeler score SUB --against FOLDER` scores it
(`labeler.scoring.score.score`); its page lists a row per scored query, what the submission
gives it (a selection's pids, a ranking's first SHOWN, an extraction's evidence) and its
metrics beside the reference's gold utilitarian passages, sortable by any metric."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from labeler.errors import InputError
from labeler.view.catalog import View

#: a ranking's first passages shown beside the reference's gold
SHOWN = 10
#: the columns before a scored row's metrics, which the page does not sort by
LISTS = ("gold", "submitted")


@dataclass
class Scored:
    """One submission's report against one version (`view`, `version`) of the views."""

    submission: str
    view: int
    version: int
    kind: str
    summary: dict[str, float | None]
    counts: dict[str, int]
    #: a row per scored query, in the reference's order: qid, question, gold (the reference's
    #: gold utilitarian pids, where it has them), submitted, missing, then each metric (null:
    #: n/a)
    rows: pl.DataFrame

    @property
    def metrics(self) -> list[str]:
        """The per-query metric columns, in the report's order."""
        return self.rows.columns[5:]

    def describe(self, views: list[View]) -> dict:
        """The submission as the page lists it: which version it is scored against, its
        summary and counts."""
        version = views[self.view].versions[self.version].manifest
        return {"submission": self.submission, "view": self.view, "kind": self.kind,
                "reference": f"{version['llm']} v{version['version']}",
                "summary": self.summary, "counts": self.counts, "metrics": self.metrics}

    def page(self, *, sort: str = "", descending: bool = False, offset: int = 0,
             limit: int = 50) -> dict:
        """One page of the per-query rows, in the reference's order or sorted by the column
        `sort` (n/a last): {"total", "rows"}."""
        frame = self.rows
        if sort:
            if sort not in frame.columns or sort in LISTS:
                raise InputError(f"cannot sort by {sort!r}", field_name="sort", hint="one of "
                                 + ", ".join(c for c in frame.columns if c not in LISTS))
            frame = frame.sort(sort, descending=descending, nulls_last=True,
                               maintain_order=True)
        return {"total": frame.height, "rows": frame.slice(offset, limit).to_dicts()}


def score_submissions(submissions: list[str | Path], views: list[View]) -> list[Scored]:
    """Score each submission against each version folder of `views`, in order."""
    from labeler.scoring.score import score

    scored = []
    for submission in submissions:
        given: dict[str, object] | None = None
        for i, view in enumerate(views):
            for j, version in enumerate(view.versions):
                report = score(submission, version.folder)
                given = given if given is not None else _submitted(submission, report.kind)
                result = report.as_dict()  # NaN as None, as `labeler score --json` gives it
                scored.append(Scored(str(submission), i, j, report.kind, result["metrics"],
                                     result["counts"], _rows(report.rows(), given, view,
                                                             version.rows)))
    return scored


def _submitted(path: str | Path, kind: str) -> dict[str, object]:
    """What the submission gives each query: a selection's pids, a ranking's first SHOWN
    pids (kept chunk by chunk as it is read), an extraction's evidence."""
    from labeler.scoring.submissions import read_submission

    top: dict[str, list[str]] = {}

    def keep(chunk) -> None:
        top.update((q, [d for d, _ in chunk.ranking(q)[:SHOWN]]) for q in chunk)

    entries = read_submission(path, kind=kind, consume=keep).entries
    return top if kind == "ranking" else entries


def _rows(rows: list[dict], given: dict[str, object], view: View,
          labels: pl.DataFrame) -> pl.DataFrame:
    """The report's per-query rows with each query's question, the reference's gold and what
    the submission gives it."""
    frame = pl.DataFrame(rows, infer_schema_length=None).rename({"qid": "key"})
    metrics = [c for c in frame.columns if c not in ("key", "missing")]
    frame = frame.with_columns(pl.col(metrics).cast(pl.Float64), pl.Series(
        "submitted", [given.get(q) for q in frame["key"]]))
    frame = frame.join(view.queries.select("key", "question"), on="key", how="left",
                       maintain_order="left")
    frame = frame.join(labels.select("key", gold="utility"), on="key", how="left",
                       maintain_order="left")
    return frame.select(pl.col("key").alias("qid"), "question", *LISTS, "missing", *metrics)
