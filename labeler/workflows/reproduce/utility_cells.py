"""The `report` records (schemas/report.schema.json) of the utility paper's tables and
figures, read off what the reproduce steps computed: each utility artifact's statistics and
records, each submission's score report, each comparison's tables.

One function per source of numbers; every cell carries the paper's number where the paper
reports that LLM and dataset (`labeler.report.paper`), and `source`, the step's output and the
statistic read. Shares become percent, as the paper prints them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from labeler.report.paper import paper_value
from labeler.scoring.rag import known_split

#: utility statistic -> (Table 3 method) for each candidate pool's artifact
TABLE3 = (("accuracy_all", "all"), ("accuracy_utilitarian", "utilitarian"))


def cell(item: str, llm: str, dataset: str, ours: float | None, *, source: str,
         method: str | None = None, with_answer: bool | None = None, pool: str | None = None,
         query_type: str | None = None, top_k: int | None = None, column: str | None = None,
         unit: str = "percent", queries: int | None = None) -> dict:
    """One report record; a share `ours` (unit percent) becomes percent, NaN becomes None,
    and a table's cell gets the paper's number at the same place."""
    if ours is not None and (math.isnan(ours)):
        ours = None
    if ours is not None and unit == "percent":
        ours = 100 * ours
    key = {"llm": llm, "dataset": dataset, "method": method, "with_answer": with_answer,
           "pool": pool, "query_type": query_type, "top_k": top_k}
    paper = paper_value(item.removeprefix("table-"), **key) if item.startswith("table") else None
    return {"item": item, **key, "column": column, "ours": ours,
            "paper": None if paper is None else paper["value"],
            "paper_marks": None if paper is None else paper["marks"], "unit": unit,
            "queries": queries, "source": source}


def utility_cells(llm: str, dataset: str, pool: str, stats: dict, source: str) -> list[dict]:
    """Table 2 (gold utilitarian passages per query), Table 3 (RAG accuracy without
    retrieval, with all candidates, with the gold utilitarian ones) and, for rp, Figure 1a,
    from one utility artifact's statistics (what `labeler build` prints)."""
    n = stats.get("queries")
    out = [cell("table-2", llm, dataset, stats["mean_utilitarian"], method="utilitarian_count",
                pool=pool, unit="count", queries=n, source=f"{source} mean_utilitarian")]
    if pool == "rp":
        out.append(cell("table-3", llm, dataset, stats["accuracy_no_passage"],
                        method="no_passage", queries=n,
                        source=f"{source} accuracy_no_passage"))
    out += [cell("table-3", llm, dataset, stats[key], method=method, pool=pool, queries=n,
                 source=f"{source} {key}") for key, method in TABLE3]
    if pool == "rp":
        out.append(cell("figure-1a", llm, dataset, stats["accuracy_all"], method="all",
                        pool=pool, queries=n, source=f"{source} accuracy_all"))
    return out


def split_cells(item: str, llm: str, dataset: str, records: Sequence[dict],
                correct: Sequence[float | None], *, source: str, figure: bool = False,
                **key) -> list[dict]:
    """Mean of `correct` (one value per record, None: not asked) over the records' unknown
    and known queries (`known`: answered right closed-book); a figure's cells name the
    query type in `column`."""
    split = known_split("correct", [math.nan if c is None else c for c in correct],
                        [r["known"] for r in records])
    out = []
    for query_type in ("unknown", "known"):
        values = split[f"correct_{query_type}"]
        values = values[~np.isnan(values)]
        out.append(cell(item, llm, dataset, float(values.mean()) if values.size else None,
                        query_type=None if figure else query_type,
                        column=query_type if figure else None, queries=int(values.size),
                        source=source, **key))
    return out


def artifact_splits(llm: str, dataset: str, records: Sequence[dict], k: int,
                    source: str) -> list[dict]:
    """Table 6's first row (RAG with all top-k candidates, `rag.all`) and Figure 4 (RAG
    with the human gold passages, `rag.human_gold`), on unknown and known queries."""
    human = [None if r["rag"]["human_gold"] is None else float(r["rag"]["human_gold"]["correct"])
             for r in records]
    return [*split_cells("table-6", llm, dataset, records,
                         [float(r["rag"]["all"]["correct"]) for r in records],
                         method="all", pool="rp", top_k=k,
                         source=f"{source} rag.all.correct"),
            *split_cells("figure-4", llm, dataset, records, human, figure=True,
                         method="human_gold", source=f"{source} rag.human_gold.correct")]


def score_cells(llm: str, dataset: str, method: str, with_answer: bool | None, report,
                source: str) -> list[dict]:
    """Table 4 (a selection's F1) or Table 5 (a ranking's NDCG@5) from its score report;
    with --rag, Table 6 (RAG accuracy on unknown and known queries, as the report splits it;
    a ranking answers with its top 5)."""
    queries = report.counts.get("queries")
    top_k = None if report.kind == "selection" else 5
    if report.kind == "selection":
        out = [cell("table-4", llm, dataset, report.summary["f1"], method=method,
                    with_answer=with_answer, pool="rp", queries=queries, source=f"{source} f1")]
    else:
        out = [cell("table-5", llm, dataset, report.summary["ndcg@5"], method=method,
                    with_answer=with_answer, pool="rp", top_k=top_k, queries=queries,
                    source=f"{source} ndcg@5")]
    if "rag_accuracy" in report.summary:
        out += [cell("table-6", llm, dataset, report.summary[f"rag_accuracy_{split}"],
                     method=method, with_answer=with_answer, pool="rp", query_type=split,
                     top_k=top_k, queries=report.counts[f"{split}_queries"],
                     source=f"{source} --rag rag_accuracy_{split}")
                for split in ("unknown", "known")]
    return out


def perplexity_cells(table, sources: dict[tuple[str, str], str]) -> list[dict]:
    """Figure 5 from `labeler.workflows.perplexity`'s table: per LLM, a bar per group of
    human gold passages and text; `sources`: (dataset, LLM) -> its labels' folder."""
    from labeler.workflows.perplexity import TEXTS

    return [cell("figure-5", row["llm"], row["dataset"], row[column], pool="hgp",
                 method="perplexity", column=f"{row['group']}, {text}", unit="perplexity",
                 queries=row["passages"],
                 source=f"{sources[row['dataset'], row['llm']]} perplexity.{column}")
            for row in table.to_dicts() for column, text in TEXTS.items()]


def compare_cells(dataset: str, stats: dict, source: str, *, nq: bool) -> list[dict]:
    """Figures 3 (and 1b for an NQ dataset: `nq`) from a comparison's transfer table and
    Figure 2 from its overlap table (gold utilitarian passages shared per query), a cell per
    (LLM, column)."""
    out = []
    items = [("figure-3", "transfer"), ("figure-2", "overlap")]
    if nq:
        items.insert(0, ("figure-1b", "transfer"))
    for item, table in items:
        out += [cell(item, row["reader"], dataset, row[column], column=column, pool="mcp",
                     method=table, unit="count" if table == "overlap" else "percent",
                     source=f"{source} {table}")
                for row in stats[table] for column in stats["columns"]]
    return out

