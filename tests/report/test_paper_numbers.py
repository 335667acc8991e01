"""The paper's numbers file (labeler/data/utility_paper.csv) against the paper's own table
lines (fixtures/utility_paper_tables.txt): every number, in order, with its marks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labeler.report.paper import DATASETS, LLMS, paper_numbers, paper_value

TABLES = Path(__file__).parent / "fixtures" / "utility_paper_tables.txt"
NUMBER = re.compile(r"^(\d+\.\d+)(.*)$")


def _seed_numbers() -> dict[str, list[tuple[float, str]]]:
    """table -> (value, marks) of every numeric cell of its row lines, in reading order."""
    out: dict[str, list[tuple[float, str]]] = {}
    table = None
    for line in TABLES.read_text(encoding="utf-8").splitlines():
        if line.startswith("Table "):
            table = line.split(".")[0].removeprefix("Table ")
            continue
        cells = line.split("\t")[1:]
        if cells and all(NUMBER.match(c) for c in cells):
            out.setdefault(table, []).extend(
                (float(m.group(1)), m.group(2).replace("$\\dagger$", "†"))
                for m in map(NUMBER.match, cells))
    return out


@pytest.mark.parametrize("table", ["2", "3", "4", "5", "6"])
def test_every_number_of_the_table_is_typed_in_order(table):
    seed = _seed_numbers()[table]
    typed = [(row["value"], row["marks"] or "") for row in paper_numbers()
             if row["table"] == table]
    assert typed == seed


def test_rows_name_labeler_llms_and_datasets_and_are_unique():
    rows = paper_numbers()
    assert {r["llm"] for r in rows} == set(LLMS)
    assert {r["dataset"] for r in rows} == {*DATASETS, "overall"}
    keys = [(r["table"], r["llm"], r["dataset"], r["method"], r["with_answer"], r["pool"],
             r["query_type"], r["top_k"]) for r in rows]
    assert len(keys) == len(set(keys))  # each number reachable by its row and column


@pytest.mark.parametrize(("table", "key", "value", "marks"), [
    # Table 2: Qwen3-8B's MCP count on TQ
    ("2", {"llm": "qwen3-8b", "dataset": "tq", "method": "utilitarian_count", "pool": "mcp"},
     2.58, None),
    # Table 3: Llama's gold utilitarian passages of rp on NQ, significant over HGP
    ("3", {"llm": "llama3.1-8b", "dataset": "nq", "method": "utilitarian", "pool": "rp"},
     76.17, "†"),
    # Table 4: Qwen3-32B's LVS without the answer on MS MARCO-FQA
    ("4", {"llm": "qwen3-32b", "dataset": "msmarco-fqa", "method": "lvs", "with_answer": False,
           "pool": "rp"}, 51.29, None),
    # Table 5: Llama's likelihood on TQ (typed "$\dagger$" in the text)
    ("5", {"llm": "llama3.1-8b", "dataset": "tq", "method": "likelihood", "pool": "rp",
           "top_k": 5}, 78.25, "†"),
    # Table 6: Qwen3-8B's LVR top-5 on 2Wiki's unknown queries
    ("6", {"llm": "qwen3-8b", "dataset": "2wiki", "method": "lvr", "with_answer": True,
           "pool": "rp", "query_type": "unknown", "top_k": 5}, 27.42, "†‡⋆"),
])
def test_a_handful_read_back_by_their_place(table, key, value, marks):
    row = paper_value(table, **key)
    assert (row["value"], row["marks"]) == (value, marks)


def test_a_place_the_paper_does_not_report_has_no_number():
    # Table 5 has no AttR row for Qwen3-14B, and no LLM's nq-sample numbers
    assert paper_value("5", llm="qwen3-14b", dataset="nq", method="attention", pool="rp",
                       top_k=5) is None
    assert paper_value("3", llm="llama3.1-8b", dataset="nq-sample", method="no_passage") is None
