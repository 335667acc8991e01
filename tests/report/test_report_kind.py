"""The `report` kind over a real report's records (fixtures/report_nq_sample_smollm2.jsonl):
the paper's layout in markdown, the figures, the version folder `labeler validate` accepts."""

from __future__ import annotations

import json

from click.testing import CliRunner
from support.paper_report import report_records as _records
from support.paper_report import write_report

from labeler.cli import cli
from labeler.report.figures import FIGURES, render_figure
from labeler.report.tables import TITLES, render_table
from labeler.workflows.reproduce.utility_cells import cell


def test_a_cell_has_the_papers_number_where_the_paper_reports_its_llm_and_dataset():
    ours = cell("table-3", "qwen3-8b", "nq", 0.25, method="no_passage", source="here")
    assert (ours["ours"], ours["paper"], ours["paper_marks"]) == (25.0, 24.71, None)
    sample = cell("table-3", "qwen3-8b", "nq-sample", 0.25, method="no_passage", source="here")
    assert sample["paper"] is None  # a sample of NQ is not the paper's NQ
    count = cell("table-2", "llama3.1-8b", "tq", 1.5, method="utilitarian_count", pool="hgp",
                 unit="count", source="here")
    assert (count["ours"], count["paper"]) == (1.5, 0.33)  # counts stay counts


def test_tables_are_drawn_in_the_papers_layout():
    records = _records()
    table3 = render_table("table-3", [r for r in records if r["item"] == "table-3"])
    assert "| | nq-sample smollm2-135m |" in table3  # columns: dataset x LLM
    rows = [line.split(" | ")[0].removeprefix("| ") for line in table3.splitlines()
            if line.startswith("| ") and not line.startswith("| |")]
    assert rows == ["Without retrieval", "All candidates (rp)", "All candidates (hgp)",
                    "All candidates (mcp)", "Gold utilitarian passages (rp)",
                    "Gold utilitarian passages (hgp)", "Gold utilitarian passages (mcp)"]
    table6 = render_table("table-6", [r for r in records if r["item"] == "table-6"])
    assert "| | nq-sample unknown | nq-sample known |" in table6
    assert "**smollm2-135m (utility-based selection)**" in table6
    paper = {**records[0], "paper": 24.71, "paper_marks": "†", "ours": 25.0}
    assert "| 25.00 (24.71†) |" in render_table(paper["item"], [paper])


def test_every_figure_is_a_png_and_a_figure_without_data_says_so():
    records = _records()
    for item in FIGURES:
        png = render_figure(item, [r for r in records if r["item"] == item])
        assert png.startswith(b"\x89PNG")
    assert not [r for r in records if r["item"] == "figure-5"]  # no perplexity analysis yet


def test_the_version_holds_every_table_and_figure_and_validates(tmp_path):
    folder = write_report(tmp_path / "out")
    manifest = json.loads((folder / "manifest.json").read_text())
    for item in TITLES:
        assert (folder / f"{item}.md").read_text() == manifest["stats"]["tables"][item]
    for item in FIGURES:
        assert (folder / f"{item}.png").read_bytes().startswith(b"\x89PNG")
    card = (folder / "README.md").read_text()
    assert card.startswith("---\nlanguage:")  # the card's YAML block is the Hub's
    assert "## Table 4." in card and "](figure-2.png)" in card
    result = CliRunner().invoke(cli, ["validate", str(folder)])
    assert result.exit_code == 0, result.output
