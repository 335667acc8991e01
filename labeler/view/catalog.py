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
from labeler.view.subjects import JUDGED

#: the query list's filters: name -> what it keeps
FILTERS = {
    "all": "every query",
    "known": "every LLM answers it closed-book",
    "unknown": "no LLM answers it closed-book",
    "gold": "some LLM has gold utilitarian passages",
    "disagree": "the LLMs' utility labels or closed-book correctness differ",
    "unreviewed": "not yet reviewed by me",
}
#: the filters on a utility view's flag columns
FLAGS = ("known", "unknown", "gold", "disagree")


@dataclass
class View:
    """The versions of one artifact kind and dataset, and their joined query list."""

    name: str
    kind: str
    dataset: str
    versions: list[VersionIndex]
    queries: pl.DataFrame

    def page(self, *, filter: str = "all", search: str = "", offset: int = 0,
             limit: int = 50, judged: set[str] = frozenset()) -> dict:
        """One page of the query list: {"total", "rows": [{key, question, flags}]} and the
        reviewer's progress (`progress`)."""
        frame = self._listed(filter, search, judged)
        return {"total": frame.height, "rows": frame.slice(offset, limit).to_dicts(),
                **self.progress(judged)}

    def progress(self, judged: set[str]) -> dict:
        """{"judged": how many of the view's queries are in `judged`, "queries": of how many}."""
        return {"judged": int(self.queries["key"].is_in(list(judged)).sum()),
                "queries": self.queries.height}

    def neighbours(self, key: str, *, filter: str = "all", search: str = "",
                   judged: set[str] = frozenset()) -> dict:
        """The queries listed before and after `key` ({"previous", "next"}, None at an end)
        and the reviewer's `progress`; `key` keeps its place in the searched list even where
        the filter no longer keeps it (once reviewed)."""
        searched = self._listed("all", search, judged).with_row_index("at")
        place = searched.filter(pl.col("key") == key)["at"]
        at = place[0] if len(place) else -1
        kept = self._listed(filter, search, judged, searched)
        before, after = kept.filter(pl.col("at") < at), kept.filter(pl.col("at") > at)
        return {"previous": before["key"][-1] if before.height and at >= 0 else None,
                "next": after["key"][0] if after.height else None, **self.progress(judged)}

    def _listed(self, filter: str, search: str, judged: set[str],
                frame: pl.DataFrame | None = None) -> pl.DataFrame:
        """The queries (of `frame`, default all) `filter` and `search` keep."""
        if filter not in self.filters():
            raise InputError(f"unknown filter {filter!r}", field_name="filter",
                             hint=f"one of {', '.join(self.filters())}")
        frame = self.queries if frame is None else frame
        if filter in FLAGS:
            frame = frame.filter(pl.col(filter))
        elif filter == "unreviewed":
            frame = frame.filter(~pl.col("key").is_in(list(judged)))
        if search:
            frame = frame.filter(pl.col("question").str.to_lowercase()
                                 .str.contains(search.lower(), literal=True))
        return frame

    def filters(self) -> dict[str, str]:
        """The query list's filters for this view: the flags on utility labels, "unreviewed"
        where its kind takes verdicts."""
        return {name: help for name, help in FILTERS.items() if name == "all"
                or (name in FLAGS and self.kind == "utility")
                or (name == "unreviewed" and self.kind in JUDGED)}

    def query(self, key: str) -> dict:
        """A query's records, one per version (None where a version lacks it), its records
        of the versions' other tables ({table: records} per version) and, per version, all
        its records where it has several (a review's verdicts), else None (`repeated`)."""
        records = []
        for version in self.versions:
            position = version.position(key)
            records.append(None if position is None else version.record(position))
        if all(r is None for r in records):
            raise InputError(f"no query {key!r} in this view", field_name="qid")
        return {"key": key, "records": records,
                "tables": [version.table_records(key) for version in self.versions],
                "repeated": [version.repeated(key) for version in self.versions]}

    def describe(self) -> dict:
        """The view as the page lists it: its versions' names and statistics."""
        return {"name": self.name, "kind": self.kind, "dataset": self.dataset,
                "filters": self.filters(),
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
