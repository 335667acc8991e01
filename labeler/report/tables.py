"""The paper's Tables 2-6 in its layout, as markdown: our number in each cell with the paper's
beside it (in parentheses, with its significance marks) where the paper reports that LLM and
dataset.

A table is drawn from its `report` records (schemas/report.schema.json) alone: `LAYOUTS` says
for each table what makes a block, a row and a column of a record; rows and columns keep the
order the records come in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

#: table item -> its caption
TITLES = {
    "table-2": "Table 2. Average number of gold utilitarian passages per query (candidate "
               "pools rp, hgp, mcp)",
    "table-3": "Table 3. RAG accuracy (%) with each kind of evidence",
    "table-4": "Table 4. Utility-based selection: F1 (%) against the LLM's gold utilitarian "
               "passages (rp)",
    "table-5": "Table 5. Utility-based ranking: NDCG@5 (%) against the LLM's gold utilitarian "
               "passages (rp)",
    "table-6": "Table 6. RAG accuracy (%) with each method's evidence, on queries the LLM "
               "answers wrongly (unknown) and rightly (known) closed-book",
}
#: method key -> the paper's name for it
METHOD_NAMES = {"pvs": "PVS", "lvs": "LVS", "lvr": "LVR", "likelihood": "Likelihood",
                "attention": "AttR", "retrieval": "Initial retrieval",
                "no_passage": "Without retrieval", "all": "All candidates",
                "utilitarian": "Gold utilitarian passages"}

Part = Callable[[dict], str | None]


def method_label(record: dict) -> str:
    """The paper's row name of a record's method: "LVR (w/ A)", "Likelihood (top-5)",
    "All candidates (mcp)"."""
    name = METHOD_NAMES.get(record["method"], record["method"])
    if record["with_answer"] is not None:
        name += " (w/ A)" if record["with_answer"] else " (w/o A)"
    if record["item"] == "table-3" and record["pool"]:
        name += f" ({record['pool']})"
    if record["top_k"] is not None:
        name += f" (top-{record['top_k']})"
    return name


def _table6_block(record: dict) -> str:
    kind = "selection" if record["method"] in ("all", "pvs", "lvs") else "ranking"
    return f"{record['llm']} (utility-based {kind})"


def _split(record: dict) -> str:
    return f"{record['dataset']} {record['query_type'] or 'all'}"


#: table item -> (block, row, column) of a record; a None block: the table is one block
LAYOUTS: dict[str, tuple[Part, Part, Part]] = {
    "table-2": (lambda r: None, lambda r: r["llm"], lambda r: f"{r['dataset']} {r['pool']}"),
    "table-3": (lambda r: None, method_label, lambda r: f"{r['dataset']} {r['llm']}"),
    "table-4": (lambda r: r["llm"], method_label, lambda r: r["dataset"]),
    "table-5": (lambda r: r["llm"], method_label, lambda r: r["dataset"]),
    "table-6": (_table6_block, method_label, _split),
}


def render_table(item: str, records: Iterable[dict]) -> str:
    """Markdown of table `item` from its records: a caption, then per block a table whose
    cells read "ours (paper)"; "–" where a number is missing."""
    block_of, row_of, column_of = LAYOUTS[item]
    blocks: dict[str | None, dict[str, dict[str, dict]]] = {}
    columns: dict[str | None, list[str]] = {}
    for record in records:
        block = block_of(record)
        row, column = row_of(record), column_of(record)
        blocks.setdefault(block, {}).setdefault(row, {})[column] = record
        seen = columns.setdefault(block, [])
        if column not in seen:
            seen.append(column)
    lines = [f"## {TITLES[item]}", "",
             ("Each cell: our number (the paper's, with its significance marks); – where "
             "there is none."), ""]
    for block, rows in blocks.items():
        if block is not None:
            lines += [f"**{block}**", ""]
        lines += [f"| | {' | '.join(columns[block])} |",
                  f"|---|{'---|' * len(columns[block])}"]
        lines += [f"| {row} | {' | '.join(cell(cells.get(c)) for c in columns[block])} |"
                  for row, cells in rows.items()]
        lines.append("")
    return "\n".join(lines)


def cell(record: dict | None) -> str:
    """"12.34 (56.78†)": ours, then the paper's in parentheses; "–" for a missing number."""
    if record is None:
        return "–"
    ours = "–" if record["ours"] is None else f"{record['ours']:.2f}"
    if record["paper"] is None:
        return ours
    return f"{ours} ({record['paper']:.2f}{record['paper_marks'] or ''})"
