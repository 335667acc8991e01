"""`labeler push` and `labeler pull` of a `report` version (tests/report's real records)."""

from __future__ import annotations

from click.testing import CliRunner
from support.paper_report import write_report

from labeler.cli import cli

REPO = "lab/utility-paper-report"


def test_a_report_is_pushed_and_pulled_back_byte_for_byte(hub, tmp_path):
    folder = write_report(tmp_path / "out")
    pushed = CliRunner().invoke(cli, ["push", str(folder), "--repo", REPO])
    assert pushed.exit_code == 0, pushed.output
    head = hub.repo(REPO).resolve("main")
    assert "report/nq-sample/smollm2-135m/v1/figure-3.png" in head.files
    pulled = CliRunner().invoke(cli, ["pull", REPO, "--out", str(tmp_path / "back")])
    assert pulled.exit_code == 0, pulled.output
    back = tmp_path / "back" / "report" / "nq-sample" / "smollm2-135m" / "v1"
    for name in ("data-00000.jsonl", "manifest.json", "table-6.md", "figure-1b.png"):
        assert (back / name).read_bytes() == (folder / name).read_bytes()
