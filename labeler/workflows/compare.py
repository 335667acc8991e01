"""`labeler compare`: how LLM-specific gold utilitarian passages (GUPs) are, over utility
artifacts of one dataset by several LLMs (the utility paper's Figures 1b, 2 and 3).

- Transfer: for every pair (A, B), the accuracy of A answering every query with only B's GUPs
  (`labeler.scoring.rag`, so A with its own GUPs gets back exactly its `rag.utilitarian` answers),
  and of A with the human gold passages (its records' `rag.human_gold`).
- Overlap: for every pair, and for each LLM with the human gold, the mean Jaccard index
  |A ∩ B| / |A ∪ B| over the queries where A ∪ B is not empty (the paper's code gives no
  formula for its overlap; Jaccard is symmetric and 1 only for equal sets).

The result is written as one `compare` version folder, `<out>/compare/<dataset>/<A+B+...>/v<N>/`:
a record per (reader, passages) pair, manifest.json, heatmaps (transfer.png, overlap.png) and
a card that shows them, so `labeler push` publishes it like any artifact version.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from labeler.artifacts.kinds import ArtifactKind
from labeler.artifacts.manifest import DATA
from labeler.artifacts.reader import load_artifact
from labeler.artifacts.writer import write_artifact
from labeler.errors import InputError
from labeler.llm.base import Backend
from labeler.llm.calls import Calls
from labeler.progress import track
from labeler.scoring.rag import artifact_setting, load_reader, rag_correct
from labeler.tasks.utility import TEMPLATES_BY_KIND

if TYPE_CHECKING:
    import polars as pl

HUMAN = "human gold"
#: the heatmaps, (statistics table and file stem, title), of the transfer and the overlap
IMAGES = (("transfer", "RAG accuracy of the reader (row) with the passages of (column)"),
          ("overlap", "Mean Jaccard overlap of gold utilitarian passages"))


class Comparison(ArtifactKind):
    """The `compare` artifact kind: a record per (reader, passages_of) pair; its statistics
    are the transfer and overlap tables, its extra files their heatmaps."""

    name = "compare"
    metadata: ClassVar[dict] = {
        "pretty_name": "Transfer of LLM-specific gold utilitarian passages",
        "task_categories": ["question-answering", "text-retrieval"],
        "tags": ["rag", "passage-utility", "llm-specific-utility", "labeler"],
    }

    @staticmethod
    def statistics(records: Iterable[dict]) -> dict:
        """The LLMs, the tables' columns (the LLMs, then the human gold), and the transfer
        (accuracy) and overlap (mean Jaccard) tables, a row per reader."""
        records = list(records)
        llms = list(dict.fromkeys(r["reader"] for r in records))
        columns = [*llms, HUMAN]
        cells: dict[str, dict] = {llm: {} for llm in llms}
        for r in records:
            cells[r["reader"]][r["passages_of"]] = r

        def table(value: str) -> list[dict]:
            return [{"reader": llm, **{c: cells[llm][c][value] for c in columns}}
                    for llm in llms]

        return {"llms": llms, "columns": columns, "transfer": table("accuracy"),
                "overlap": table("overlap")}

    @staticmethod
    def attachments(read: Callable[[str], Iterator[dict]]) -> dict[str, str | bytes]:
        """The heatmap of each table, transfer.png and overlap.png."""
        stats = Comparison.statistics(read(DATA))
        return {f"{image}.png": _heatmap(stats[image], stats["columns"], title)
                for image, title in IMAGES}

    @classmethod
    def card_context(cls, manifest: dict) -> dict:
        """The heatmaps the card shows."""
        return {"images": [{"name": image, "title": title, "file": f"{image}.png"}
                           for image, title in IMAGES]}


@dataclass
class Compared:
    """A comparison: the LLMs, its pair records, its tables, and the folder written."""

    llms: list[str]
    records: list[dict]  # one per (reader, passages_of), schemas/compare.schema.json
    transfer: pl.DataFrame  # reader x (llms + human gold): accuracy
    overlap: pl.DataFrame  # reader x (llms + human gold): mean Jaccard
    path: Path


def compare(paths: Sequence[str | Path], *, out: str | Path = "out",
            backends: Mapping[str, Backend] | None = None, llms: Mapping[str, str] | None = None,
            cache_dir: str | Path | None = None) -> Compared:
    """Compare the utility artifacts at `paths` (version folders of one dataset, each LLM
    once, labelling the same pools) and write the comparison under `out`.

    Each reader is the LLM its manifest names (`llms[alias]` overrides the model name; a
    loaded backend in `backends[alias]` is used as it is). Everything is read and checked
    before any model is loaded, and every model is loaded before any is asked.
    """
    artifacts = _read(paths)
    aliases = [a.manifest["llm"] for a in artifacts]
    settings = [artifact_setting(a.manifest, str(a.path)) for a in artifacts]
    qids = [r["qid"] for r in artifacts[0].records]
    by_llm = {alias: {r["qid"]: r for r in a.records} for alias, a in zip(aliases, artifacts)}
    models = {alias: (backends or {}).get(alias)
              or load_reader(a.manifest, (llms or {}).get(alias), cache_dir=cache_dir)
              for alias, a in zip(aliases, artifacts)}  # all loaded before any is asked
    rows = []
    for reader, (kind, sampling) in track(list(zip(aliases, settings)), "readers"):
        backend = models[reader]
        own = by_llm[reader]
        correct = rag_correct(Calls(backend), [own[q] for _ in aliases for q in qids],
                              [by_llm[b][q]["utility_pids"] for b in aliases for q in qids],
                              kind=kind, sampling=sampling,
                              what=f"{reader}: answers with each LLM's gold utilitarian passages")
        for i, other in enumerate(aliases):
            rows += _pair(reader, other, qids, own, by_llm[other],
                          correct[i * len(qids):(i + 1) * len(qids)])
        human = [own[q]["rag"]["human_gold"] for q in qids]
        rows += _pair(reader, HUMAN, qids, own, {q: {"utility_pids": _gold(own[q])} for q in qids},
                      [None if h is None else h["correct"] for h in human])
    records = _pairs(rows)
    path = write_artifact(records, out=out, kind=Comparison,
                          dataset=artifacts[0].manifest["dataset"], llm="+".join(aliases),
                          manifest=_manifest(artifacts, settings[0][0]))
    stats = Comparison.statistics(records)
    return Compared(aliases, records, _frame(stats, "transfer"), _frame(stats, "overlap"), path)


def jaccard(a: set, b: set) -> float | None:
    """|a ∩ b| / |a ∪ b|; None when both are empty.

    >>> jaccard({"p1", "p2"}, {"p2", "p3"})
    0.3333333333333333
    """
    union = a | b
    return len(a & b) / len(union) if union else None


def _read(paths: Sequence[str | Path]) -> list:
    """The artifacts, checked: utility versions with manifests, one dataset, the same
    queries and pools, each LLM once."""
    if not paths:  # one LLM still has its own and the human gold column
        raise InputError("compare needs at least one utility artifact", field_name="artifacts")
    artifacts = []
    for path in paths:
        artifact = load_artifact(path)
        if artifact.manifest is None:
            raise InputError("compare reads artifact version folders (with manifest.json)",
                             str(path))
        artifact_setting(artifact.manifest, str(path))
        artifacts.append(artifact)
    first = artifacts[0]
    pools = {r["qid"]: [c["pid"] for c in r["candidates"]] for r in first.records}
    seen: dict[str, Path] = {}
    for a in artifacts:
        where, llm = str(a.path), a.manifest["llm"]
        if a.manifest["dataset"] != first.manifest["dataset"]:
            raise InputError(f"dataset '{a.manifest['dataset']}', not "
                             f"'{first.manifest['dataset']}' as {first.path}", where,
                             field_name="dataset", hint="compare artifacts of one dataset")
        if llm in seen:
            raise InputError(f"'{llm}' is given twice (also {seen[llm]})", where,
                             field_name="llm", hint="give one version per LLM")
        seen[llm] = a.path
        mine = {r["qid"]: [c["pid"] for c in r["candidates"]] for r in a.records}
        if list(mine) != list(pools):
            raise InputError(f"other queries than {first.path}", where, field_name="qid",
                             hint="build every artifact with the same --dataset and --limit")
        for line, (qid, pids) in enumerate(mine.items(), 1):
            if pids != pools[qid]:
                raise InputError(f"query '{qid}' has another candidate pool than in "
                                 f"{first.path}", where, line, "candidates",
                                 hint="build every artifact with the same --pool, --k, --run, "
                                      "--encoder, --index and --corpus")
    return artifacts


def _gold(record: dict) -> list[str]:
    return [c["pid"] for c in record["candidates"] if c["gold"]]


def _pair(reader: str, other: str, qids: list[str], own: dict, theirs: dict,
          correct: list) -> list[dict]:
    """The per-query rows of one (reader, passages_of) pair."""
    return [{"reader": reader, "passages_of": other, "qid": q, "correct": c,
             "jaccard": jaccard(set(own[q]["utility_pids"]), set(theirs[q]["utility_pids"]))}
            for q, c in zip(qids, correct)]


def _pairs(rows: list[dict]) -> list[dict]:
    """The pair records (schemas/compare.schema.json) of the per-query rows, with polars."""
    import polars as pl

    frame = pl.DataFrame(rows, schema={"reader": pl.String, "passages_of": pl.String,
                                       "qid": pl.String, "correct": pl.Boolean,
                                       "jaccard": pl.Float64})
    return frame.group_by("reader", "passages_of", maintain_order=True).agg(
        accuracy=pl.col("correct").mean(),
        queries=pl.col("correct").count(),
        overlap=pl.col("jaccard").mean(),
        overlap_queries=pl.col("jaccard").count(),
    ).to_dicts()


def _frame(stats: dict, table: str) -> pl.DataFrame:
    """A table of the comparison's statistics as a reader x columns frame."""
    import polars as pl

    return pl.DataFrame(stats[table], schema={"reader": pl.String,
                                              **{c: pl.Float64 for c in stats["columns"]}})


def _manifest(artifacts: list, kind: str) -> dict:
    """The comparison's manifest keys: the LLMs compared, and what their artifacts share."""
    first = artifacts[0].manifest
    return {
        "model_id": " + ".join(a.manifest["model_id"] for a in artifacts),
        "model_revision": None,
        "source_dataset": first["source_dataset"],
        "source_revision": first["source_revision"],
        "source_repos": first.get("source_repos", []),
        "language": first.get("language"),
        "license": first.get("license"),
        "prompt_templates": TEMPLATES_BY_KIND[kind],
        "sampling": {a.manifest["llm"]: a.manifest["sampling"]["answer"] for a in artifacts},
        "seed": None,
        "pool": first.get("pool"),
        "k": first.get("k"),
        "compared": [{"llm": a.manifest["llm"], "version": a.manifest["version"],
                      "model_id": a.manifest["model_id"],
                      "model_revision": a.manifest["model_revision"],
                      "accuracy_utilitarian": a.manifest["stats"]["accuracy_utilitarian"]}
                     for a in artifacts],
        "images": [f"{image}.png" for image, _ in IMAGES],
    }


def _heatmap(rows: list[dict], columns: list[str], title: str) -> bytes:
    """A reader x columns table of shares drawn as a heatmap: the PNG file's bytes."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import numpy as np

    values = np.array([[np.nan if row[c] is None else row[c] for c in columns] for row in rows],
                      dtype=float)
    figure, axes = plt.subplots(figsize=(1.6 + 1.3 * len(columns), 1.2 + 0.8 * len(values)))
    image = axes.imshow(values, vmin=0, vmax=1, cmap="viridis")
    axes.set_xticks(range(len(columns)), columns, rotation=30, ha="right")
    axes.set_yticks(range(len(values)), [row["reader"] for row in rows])
    for (i, j), v in np.ndenumerate(values):
        axes.text(j, i, "n/a" if np.isnan(v) else f"{100 * v:.1f}", ha="center", va="center",
                  color="white" if np.isnan(v) or v < 0.6 else "black")
    axes.set_xlabel("passages of")
    axes.set_ylabel("reader")
    axes.set_title(title, fontsize=9)
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=120, metadata={"Software": None})
    plt.close(figure)
    return png.getvalue()
