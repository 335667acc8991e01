"""What `labeler view` shows: the version folders it was given, grouped into views (one per
artifact kind and dataset), each with its query list and pages.

A utility view puts every LLM's version of one dataset side by side: its query list filters on
known/unknown, gold utilitarian passages, disagreement between the LLMs and text, and a query's
page joins each LLM's record of it by qid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from labeler.errors import InputError
from labeler.view.index import VersionIndex, open_version

#: the query list's filters: name -> what it keeps
FILTERS = {
    "all": "every query",
    "known": "every LLM answers it closed-book",
    "unknown": "no LLM answers it closed-book",
    "gold": "some LLM has gold utilitarian passages",
    "disagree": "the LLMs' utility labels or closed-book correctness differ",
}


@dataclass
class View:
    """The versions of one artifact kind and dataset, and their joined query list."""

    name: str
    kind: str
    dataset: str
    versions: list[VersionIndex]
    queries: pl.DataFrame

    def page(self, *, filter: str = "all", search: str = "", offset: int = 0,
             limit: int = 50) -> dict:
        """One page of the query list: {"total", "rows": [{key, question, flags}]}."""
        if filter not in FILTERS:
            raise InputError(f"unknown filter {filter!r}", field_name="filter",
                             hint=f"one of {', '.join(FILTERS)}")
        frame = self.queries
        if filter != "all" and filter in frame.columns:
            frame = frame.filter(pl.col(filter))
        if search:
            frame = frame.filter(pl.col("question").str.to_lowercase()
                                 .str.contains(search.lower(), literal=True))
        return {"total": frame.height,
                "rows": frame.slice(offset, limit).to_dicts()}

    def query(self, key: str) -> dict:
        """A query's records, one per version (None where a version lacks it), and its
        records of the versions' other tables ({table: records} per version)."""
        records = []
        for version in self.versions:
            position = version.position(key)
            records.append(None if position is None else version.record(position))
        if all(r is None for r in records):
            raise InputError(f"no query {key!r} in this view", field_name="qid")
        return {"key": key, "records": records,
                "tables": [version.table_records(key) for version in self.versions]}

    def describe(self) -> dict:
        """The view as the page lists it: its versions' names and statistics."""
        return {"name": self.name, "kind": self.kind, "dataset": self.dataset,
                "filters": FILTERS if self.kind == "utility" else {"all": FILTERS["all"]},
                "versions": [{"llm": v.manifest["llm"], "version": v.manifest["version"],
                              "folder": str(v.folder), "stats": v.manifest.get("stats", {}),
                              "labels": v.manifest.get("labels")}
                             for v in self.versions]}


def open_views(folders: list[str | Path]) -> list[View]:
    """Open every folder and group them into views by (kind, dataset), in the order given;
    InputError for a folder given twice."""
    seen: dict[Path, str] = {}
    groups: dict[tuple[str, str], list[VersionIndex]] = {}
    for folder in folders:
        resolved = Path(folder).resolve()
        if resolved in seen:
            raise InputError("this version folder is given twice", path=str(folder))
        seen[resolved] = str(folder)
        version = open_version(resolved)
        groups.setdefault((version.kind, version.manifest["dataset"]), []).append(version)
    return [View(f"{kind}-{dataset}", kind, dataset, versions, _joined(kind, versions))
            for (kind, dataset), versions in groups.items()]


def _joined(kind: str, versions: list[VersionIndex]) -> pl.DataFrame:
    """The view's query list: the first version's order, then queries only later ones hold;
    for a utility view the filter columns computed across its LLMs."""
    frames = [v.rows.with_columns(pl.lit(i).alias("version")) for i, v in enumerate(versions)]
    rows = pl.concat(frames)
    keys = rows.group_by("key", maintain_order=True).agg(pl.col("question").first())
    if kind != "utility":
        return keys
    per_query = rows.with_columns(pl.col("utility").list.sort().list.join("\x1f")
                                  .alias("labels")).group_by("key", maintain_order=True).agg(
        pl.col("known").all().alias("known"),
        (~pl.col("known").any()).alias("unknown"),
        (pl.col("utility").list.len() > 0).any().alias("gold"),
        ((pl.col("labels").n_unique() > 1) | (pl.col("known").n_unique() > 1)
         | (pl.len() < len(versions))).alias("disagree"),
    )
    return keys.join(per_query, on="key", maintain_order="left")
