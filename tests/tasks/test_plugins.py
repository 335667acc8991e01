"""A labelling method from an installed plugin package (tests/fixtures/plugin): found by its
entry point `labeler.tasks`, planned by `--dry-run`, built, validated and carded with its own
schema and card, without a line of labeler changed."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import cli
from labeler.tasks import KINDS, TASKS
from labeler.workflows.validate import validate_path

PLUGIN = Path(__file__).parents[1] / "fixtures" / "plugin"
BUILD = ["build", "--artifact", "known", "--dataset", "nq-sample", "--llm", "smollm2-135m",
         "--limit", "2", "--pool", "hgp"]


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The plugin as pip installs it, as importlib.metadata finds it: its package on sys.path
    and a dist-info folder holding its pyproject's entry points."""
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
    info = tmp_path / "site" / f"labeler_known-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items())
        for group, points in project["entry-points"].items()))
    monkeypatch.syspath_prepend(str(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


def test_a_plugin_task_is_registered_and_planned_without_a_model(installed, tmp_path):
    assert "known" in TASKS and "known" in KINDS and list(TASKS)[:3] == ["utility", "seer",
                                                                         "rubric"]
    result = CliRunner().invoke(cli, [*BUILD, "--out", str(tmp_path / "out"), "--dry-run",
                                      "--json"])
    assert result.exit_code == 0, result.output
    plan = {row["step"]: row for row in json.loads(result.stdout)["plan"]}
    assert plan["LLM calls: closed-book answers"]["count"] == "2"
    assert not any("passage answers" in step for step in plan)  # no other method's calls
    assert not (tmp_path / "out").exists()


def test_without_the_plugin_its_method_is_unknown(tmp_path):
    result = CliRunner().invoke(cli, [*BUILD, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "'known' is not one of 'utility', 'seer', 'rubric'" \
        in result.output


def test_a_plugin_task_builds_a_valid_version_with_its_own_schema_and_card(installed, loads,
                                                                            tmp_path):
    result = CliRunner().invoke(cli, [*BUILD, "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    [version] = json.loads(result.stdout)["versions"]
    folder = Path(version["path"])
    assert folder == tmp_path / "out" / "known" / "nq-sample" / "smollm2-135m" / "v1"
    assert validate_path(folder) == []
    records = [json.loads(line) for line in (folder / "data-00000.jsonl").read_text().splitlines()]
    assert [r["known"] for r in records] == [bool(r["known"]) for r in records]
    assert version["stats"]["queries"] == 2
    assert "Whether **smollm2-135m**" in (folder / "README.md").read_text()
