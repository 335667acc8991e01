"""The `compare` artifact kind: a record per (reader, passages_of) pair of `labeler compare`
(labeler.workflows.compare); its statistics are the tables of `VIEWS`, its extra files their
heatmaps, all drawn from the records alone so that `labeler validate` draws them again."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar

from labeler.artifacts.kinds import ArtifactKind
from labeler.artifacts.manifest import DATA
from labeler.report.heatmap import heatmap_png

HUMAN = "human gold"
SPLITS = ("known", "unknown")


@dataclass(frozen=True)
class View:
    """One table of the comparison: its statistics key (and image stem), title, scale
    (`labeler.report.heatmap.SCALES`) and axis labels."""

    name: str
    title: str
    scale: str
    xlabel: str = "passages of"
    ylabel: str = "reader"


#: the tables, in the order the CLI prints them and the card shows them
VIEWS = (
    View("transfer", "RAG accuracy of each reader (row) with the passages of each LLM "
         "(column) and with the human gold passages", "percent"),
    View("overlap", "Passages shared per query by the gold utilitarian passages of two LLMs, "
         "and with the human gold passages (mean over all queries)", "count",
         ylabel="gold utilitarian passages of"),
    View("jaccard", "Jaccard index of the two sets (mean over the queries where either is "
         "not empty)", "fraction", ylabel="gold utilitarian passages of"),
    View("known_unknown", "RAG accuracy on the reader's known queries (right closed-book) "
         "and unknown ones", "percent", ylabel="reader, queries"),
)


class Comparison(ArtifactKind):
    """The `compare` artifact kind: a record per (reader, passages_of) pair; its statistics
    are the tables of `VIEWS`, its extra files their heatmaps."""

    name = "compare"
    metadata: ClassVar[dict] = {
        "pretty_name": "Transfer of LLM-specific gold utilitarian passages",
        "task_categories": ["question-answering", "text-retrieval"],
        "tags": ["rag", "passage-utility", "llm-specific-utility", "labeler"],
    }

    @staticmethod
    def statistics(records: Iterable[dict]) -> dict:
        """The LLMs, the tables' columns (the LLMs, then the human gold), and a row per
        reader of: `transfer` (accuracy), `overlap` (mean shared passages), `jaccard`; and
        `known_unknown`, two rows per reader (`split` known, unknown) with its `queries` of
        that split, those of them with human gold passages (`human_gold_queries`) and the
        accuracy over them with each column's passages."""
        records = list(records)
        llms = list(dict.fromkeys(r["reader"] for r in records))
        columns = [*llms, HUMAN]
        cells: dict[str, dict] = {llm: {} for llm in llms}
        for r in records:
            cells[r["reader"]][r["passages_of"]] = r

        def table(value: str) -> list[dict]:
            return [{"reader": llm, **{c: cells[llm][c][value] for c in columns}}
                    for llm in llms]

        split = [{"reader": llm, "split": s, "queries": cells[llm][llm][f"queries_{s}"],
                  "human_gold_queries": cells[llm][HUMAN][f"queries_{s}"],
                  **{c: cells[llm][c][f"accuracy_{s}"] for c in columns}}
                 for llm in llms for s in SPLITS]
        return {"llms": llms, "columns": columns, "transfer": table("accuracy"),
                "overlap": table("overlap"), "jaccard": table("jaccard"),
                "known_unknown": split}

    @staticmethod
    def attachments(read: Callable[[str], Iterator[dict]]) -> dict[str, str | bytes]:
        """The heatmap of each table, `<view>.png`."""
        stats = Comparison.statistics(read(DATA))
        return {f"{view.name}.png": _heatmap(stats, view) for view in VIEWS}

    @classmethod
    def card_context(cls, manifest: dict) -> dict:
        """The heatmaps the card shows."""
        return {"images": [{"name": view.name, "title": view.title, "file": f"{view.name}.png"}
                           for view in VIEWS]}


def _heatmap(stats: dict, view: View) -> bytes:
    """The heatmap of one table of the statistics: the PNG file's bytes."""
    table, columns = stats[view.name], stats["columns"]
    rows = [row["reader"] if "split" not in row else
            f"{row['reader']}, {row['split']} (n={row['queries']})" for row in table]
    return heatmap_png([[row[c] for c in columns] for row in table], rows, columns,
                       title=view.title, scale=view.scale, xlabel=view.xlabel,
                       ylabel=view.ylabel)
