"""The `report` artifact kind: the utility paper's Tables 2-6 and Figures 1-5 with our numbers
beside the paper's, one record a cell (schemas/report.schema.json).

Its statistics (each table as markdown, and counts) and its extra files (`table-N.md`,
`figure-N.png`) are drawn from the records alone, so `labeler validate` redraws them and
`labeler push` publishes the version like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import ClassVar

from labeler.artifacts.kinds import ArtifactKind
from labeler.artifacts.manifest import DATA
from labeler.report.figures import FIGURES, render_figure
from labeler.report.tables import TITLES, render_table


class PaperReport(ArtifactKind):
    """The `report` kind: a record per number of the paper's tables and figures."""

    name = "report"
    metadata: ClassVar[dict] = {
        "pretty_name": "LLM-specific utility: the paper's tables and figures reproduced",
        "task_categories": ["question-answering", "text-retrieval"],
        "tags": ["rag", "passage-utility", "llm-specific-utility", "reproduction", "labeler"],
    }

    @staticmethod
    def statistics(records: Iterable[dict]) -> dict:
        """`tables`: each table's markdown; `cells`, `ours` (cells we computed), `paper`
        (cells with the paper's number) and `both`."""
        records = list(records)
        return {
            "tables": {item: render_table(item, [r for r in records if r["item"] == item])
                       for item in TITLES},
            "cells": len(records),
            "ours": sum(r["ours"] is not None for r in records),
            "paper": sum(r["paper"] is not None for r in records),
            "both": sum(r["ours"] is not None and r["paper"] is not None for r in records),
        }

    @staticmethod
    def attachments(read: Callable[[str], Iterator[dict]]) -> dict[str, str | bytes]:
        """`table-N.md` for each table and `figure-N.png` for each figure."""
        records = list(read(DATA))
        files: dict[str, str | bytes] = {
            f"{item}.md": render_table(item, [r for r in records if r["item"] == item])
            for item in TITLES}
        files |= {f"{item}.png": render_figure(item, [r for r in records if r["item"] == item])
                  for item in FIGURES}
        return files

    @classmethod
    def card_context(cls, manifest: dict) -> dict:
        """The figures the card shows, with their captions."""
        return {"figures": [{"file": f"{item}.png", "title": title}
                            for item, (title, _) in FIGURES.items()]}
