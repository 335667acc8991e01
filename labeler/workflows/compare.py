"""`labeler compare`: how LLM-specific gold utilitarian passages (GUPs) are, over utility
artifacts of one dataset by several LLMs (the utility paper's Figures 1b, 2, 3 and 4).

- Transfer (Fig. 1b, 3): for every pair (A, B), the accuracy of A answering every query with
  only B's GUPs (`labeler.scoring.rag`, so A with its own GUPs gets back exactly its
  `rag.utilitarian` answers), and of A with the human gold passages (HGP; its records'
  `rag.human_gold`, over the queries that have them).
- Overlap (Fig. 2): for every pair, and for each LLM with the HGP, the average number of
  passages the two sets share, |A ∩ B| averaged over all queries (an empty set shares 0), as
  the paper's "average number of overlapping passages"; A with itself is A's mean GUP count
  (Table 2). Beside it the mean Jaccard index |A ∩ B| / |A ∪ B| over the queries where A ∪ B
  is not empty. The HGP are the pool's human gold candidates: all of them for the `hgp` and
  `mcp` pools; an `rp` pool holds only those retrieved, which leaves |A ∩ HGP| as it is
  (GUPs are candidates) but raises the Jaccard index.
- Known and unknown (Fig. 4): each accuracy again over the reader's known queries (answered
  right closed-book, its records' `known`) and over its unknown ones, with their counts.

The result is written as one `compare` version folder, `<out>/compare/<dataset>/<A+B+...>/v<N>/`:
a record per (reader, passages) pair, manifest.json, a heatmap per table and a card that
shows them, so `labeler push` publishes it like any artifact version. The answers go through
the call cache: a rerun asks nothing it has asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from labeler.artifacts.reader import load_artifact
from labeler.artifacts.writer import write_artifact
from labeler.errors import InputError
from labeler.llm.base import Backend
from labeler.llm.calls import Calls
from labeler.progress import track
from labeler.scoring.rag import artifact_setting, load_reader, prompt_version, rag_correct
from labeler.tasks.compare import HUMAN, VIEWS, Comparison
from labeler.tasks.utility import TEMPLATES_BY_KIND

if TYPE_CHECKING:
    import polars as pl


@dataclass
class Compared:
    """A comparison: the LLMs, its pair records, its tables (polars frames, one per `VIEWS`
    entry; `figures` names them by the paper's figure), and the folder written.

    `transfer`, `overlap` and `jaccard` have a row per reader (`reader`) and a Float64 column
    per LLM, then `human gold`; `known_unknown` has `reader`, `split` ("known" or
    "unknown"), `queries` (the reader's queries of that split), `human_gold_queries` (those
    of them with human gold passages, which the `human gold` column is over), then the same
    accuracy columns. Accuracies and Jaccard indexes are shares 0–1; overlaps are passages
    per query.
    """

    llms: list[str]
    records: list[dict]  # one per (reader, passages_of), schemas/compare.schema.json
    transfer: pl.DataFrame  # reader x (llms + human gold): RAG accuracy
    overlap: pl.DataFrame  # reader x (llms + human gold): mean passages shared per query
    jaccard: pl.DataFrame  # reader x (llms + human gold): mean Jaccard index
    known_unknown: pl.DataFrame  # (reader, split) x (llms + human gold): RAG accuracy
    path: Path

    @property
    def figures(self) -> dict[str, pl.DataFrame]:
        """The tables by the paper's figure: 1b and 3 the transfer (1b on NQ), 2 the
        overlap (a–c its `human gold` column, d–f the LLM pairs), 4 the known/unknown split
        (its `human gold` column)."""
        return {"1b": self.transfer, "2": self.overlap, "3": self.transfer,
                "4": self.known_unknown}


def compare(paths: Sequence[str | Path], *, out: str | Path = "out",
            backends: Mapping[str, Backend] | None = None, llms: Mapping[str, str] | None = None,
            cache_dir: str | Path | None = None, served: dict | None = None) -> Compared:
    """Compare the utility artifacts at `paths` (version folders of one dataset, each LLM
    once, labelling the same pools) and write the comparison under `out`.

    Each reader is the LLM its manifest names (`llms[alias]` overrides the model name; a
    loaded backend in `backends[alias]` is used as it is), run as its manifest says or as
    `served` (the command's model options, e.g. a served model's) says. Everything is read and checked
    before any model is loaded, and every model is loaded before any is asked.
    """
    artifacts = _read(paths)
    aliases = [a.manifest["llm"] for a in artifacts]
    settings = [artifact_setting(a.manifest, str(a.path)) for a in artifacts]
    qids = [r["qid"] for r in artifacts[0].records]
    by_llm = {alias: {r["qid"]: r for r in a.records} for alias, a in zip(aliases, artifacts)}
    models = {alias: (backends or {}).get(alias)
              or load_reader(a.manifest, (llms or {}).get(alias), cache_dir=cache_dir,
                             served=served)
              for alias, a in zip(aliases, artifacts)}  # all loaded before any is asked
    rows = []
    for reader, (kind, sampling) in track(list(zip(aliases, settings)), "readers"):
        own = by_llm[reader]
        correct = rag_correct(Calls(models[reader]),
                              [own[q] for _ in aliases for q in qids],
                              [by_llm[b][q]["utility_pids"] for b in aliases for q in qids],
                              kind=kind, sampling=sampling,
                              version=prompt_version(artifacts[aliases.index(reader)].manifest),
                              what=f"{reader}: answers with each LLM's gold utilitarian passages")
        for i, other in enumerate(aliases):
            rows += _pair(reader, other, qids, own,
                          {q: by_llm[other][q]["utility_pids"] for q in qids},
                          correct[i * len(qids):(i + 1) * len(qids)])
        human = [own[q]["rag"]["human_gold"] for q in qids]
        rows += _pair(reader, HUMAN, qids, own, {q: _gold(own[q]) for q in qids},
                      [None if h is None else h["correct"] for h in human])
    records = _pairs(rows)
    path = write_artifact(records, out=out, kind=Comparison,
                          dataset=artifacts[0].manifest["dataset"], llm="+".join(aliases),
                          manifest=_manifest(artifacts, settings[0][0]))
    stats = Comparison.statistics(records)
    return Compared(aliases, records, *(_frame(stats, view.name) for view in VIEWS), path)


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


def _pair(reader: str, other: str, qids: list[str], own: dict, theirs: dict[str, list[str]],
          correct: list) -> list[dict]:
    """The per-query rows of one (reader, passages_of) pair: the reader's answer with the
    other set, whether the reader knows the query, and how the reader's GUPs meet the set."""
    rows = []
    for q, c in zip(qids, correct):
        mine, other_set = set(own[q]["utility_pids"]), set(theirs[q])
        rows.append({"reader": reader, "passages_of": other, "qid": q, "correct": c,
                     "known": own[q]["known"], "shared": len(mine & other_set),
                     "jaccard": jaccard(mine, other_set)})
    return rows


def _pairs(rows: list[dict]) -> list[dict]:
    """The pair records (schemas/compare.schema.json) of the per-query rows, with polars."""
    import polars as pl

    frame = pl.DataFrame(rows, schema={"reader": pl.String, "passages_of": pl.String,
                                       "qid": pl.String, "correct": pl.Boolean,
                                       "known": pl.Boolean, "shared": pl.Int64,
                                       "jaccard": pl.Float64})
    correct, known = pl.col("correct"), pl.col("known")
    return frame.group_by("reader", "passages_of", maintain_order=True).agg(
        accuracy=correct.mean(),
        queries=correct.count(),
        overlap=pl.col("shared").mean(),
        overlap_queries=pl.col("shared").count(),
        jaccard=pl.col("jaccard").mean(),
        jaccard_queries=pl.col("jaccard").count(),
        accuracy_known=correct.filter(known).mean(),
        queries_known=correct.filter(known).count(),
        accuracy_unknown=correct.filter(~known).mean(),
        queries_unknown=correct.filter(~known).count(),
    ).to_dicts()


def _frame(stats: dict, table: str) -> pl.DataFrame:
    """A table of the comparison's statistics as a polars frame (`Compared`)."""
    import polars as pl

    keys = {"split": pl.String, "queries": pl.Int64, "human_gold_queries": pl.Int64}
    head = {"reader": pl.String, **(keys if table == "known_unknown" else {})}
    return pl.DataFrame(stats[table], schema={**head, **{c: pl.Float64 for c in stats["columns"]}})


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
        "images": [f"{view.name}.png" for view in VIEWS],
    }
