"""The utility paper's published numbers (Zhang et al., LLM-Specific Utility for RAG, Tables
2-6), typed from the paper's tables into `labeler/data/utility_paper.csv`, one number a line.

Each line names its table, the row it is in (LLM, dataset, method, with or without the
pseudo-answer, candidate pool, query type, top-k of the RAG evidence), the paper's own row and
column labels, the value (percent, or passages in Table 2) and the paper's significance marks.
LLMs and datasets use labeler's names (`llama3.1-8b`, `qwen3-8b`, `nq`, `msmarco-fqa`, ...);
"overall" is the paper's Overall column over its six datasets.
"""

from __future__ import annotations

import csv
import io
from functools import cache
from importlib import resources

#: the paper's four LLMs and six datasets, in its tables' order
LLMS = ("llama3.1-8b", "qwen3-8b", "qwen3-14b", "qwen3-32b")
DATASETS = ("nq", "hotpotqa", "2wiki", "tq", "msmarco-fqa", "fever")
#: the fields that say which number a line is (beside the table)
KEY = ("llm", "dataset", "method", "with_answer", "pool", "query_type", "top_k")


@cache
def paper_numbers() -> tuple[dict, ...]:
    """Every published number: {table, llm, dataset, method, with_answer (bool | None), pool,
    query_type, top_k (int | None), value (float), marks, paper_row, paper_column}; empty
    fields are None."""
    text = resources.files("labeler").joinpath("data/utility_paper.csv").read_text("utf-8")
    return tuple(_typed(row) for row in csv.DictReader(io.StringIO(text)))


def paper_value(table: str, **key) -> dict | None:
    """The published number of `table` at `key` (the `KEY` fields, None where a field does
    not apply), or None where the paper reports none.

    >>> paper_value("3", llm="qwen3-8b", dataset="nq", method="no_passage")["value"]
    24.71
    """
    wanted = {name: key.get(name) for name in KEY}
    return _index().get((table, *wanted.values()))


@cache
def _index() -> dict[tuple, dict]:
    return {(row["table"], *(row[name] for name in KEY)): row for row in paper_numbers()}


def _typed(row: dict) -> dict:
    out = {name: value or None for name, value in row.items()}
    out["value"] = float(row["value"])
    out["with_answer"] = {"true": True, "false": False}.get(row["with_answer"])
    out["top_k"] = int(row["top_k"]) if row["top_k"] else None
    return out
