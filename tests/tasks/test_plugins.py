"""A labelling method from an installed plugin package (tests/fixtures/plugin): found by its
entry point `labeler.tasks`, planned by `--dry-run`, built, validated and carded with its own
schema and card, without a line of labeler changed."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.plugins import install

from labeler.cli import cli
from labeler.tasks import KINDS, TASKS
from labeler.workflows.validate import validate_path

PLUGIN = Path(__file__).parents[1] / "fixtures" / "plugin"
BUILD = ["build", "--artifact", "known", "--dataset", "nq-sample", "--llm", "smollm2-135m",
         "--limit", "2", "--pool", "hgp"]


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The plugin package of tests/fixtures/plugin, installed."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    install(tmp_path / "site", tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"],
            monkeypatch)


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


def test_a_backend_lacking_an_operation_a_task_asks_is_refused_before_any_model_loads(
        tmp_path, monkeypatch, no_loads):
    """A plugin backend answers the optional operations its class implements: the bare
    contract (labeler.llm.base.Backend, registered as 'bare') answers none, so a seer build,
    which counts tokens, is refused naming the backend and the operation."""
    install(tmp_path / "site", {"name": "labeler-bare", "version": "0.1", "entry-points": {
        "labeler.backends": {"bare": "labeler.llm.base:Backend"}}}, monkeypatch)
    result = CliRunner().invoke(cli, ["build", "--artifact", "seer", "--dataset", "nq-sample",
                                      "--llm", "smollm2-135m", "--backend", "bare", "--limit",
                                      "1", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert result.exception.line().startswith(
        "field 'backend': --artifact seer needs count_tokens, which the bare backend does not "
        "answer")
    assert no_loads == [] and not (tmp_path / "out").exists()


def test_a_task_that_asks_no_llm_builds_without_llm_and_loads_no_model(installed, no_loads,
                                                                       tmp_path):
    """`lexical` (asks_llm = False): built with no --llm into .../no-llm/v1, no model asked
    to load; validated and scored against like any method; an --llm given to it is refused."""
    runner = CliRunner()
    args = ["build", "--artifact", "lexical", "--dataset", "nq-sample", "--limit", "2",
            "--pool", "hgp", "--out", str(tmp_path / "out")]
    planned = runner.invoke(cli, [*args, "--dry-run", "--json"])
    assert planned.exit_code == 0, planned.output
    plan = {row["step"]: row for row in json.loads(planned.stdout)["plan"]}
    assert plan["LLMs"]["count"] == "none" and not any("LLM calls" in s for s in plan)

    result = runner.invoke(cli, [*args, "--json"])

    assert result.exit_code == 0, result.output
    [version] = json.loads(result.stdout)["versions"]
    folder = Path(version["path"])
    assert folder == tmp_path / "out" / "lexical" / "nq-sample" / "no-llm" / "v1"
    assert no_loads == []
    assert validate_path(folder) == []
    records = [json.loads(line) for line in (folder / "data-00000.jsonl").read_text().splitlines()]
    selection = tmp_path / "selection.jsonl"
    selection.write_text("".join(json.dumps({"qid": r["qid"], "selected": [
        c["pid"] for c in r["candidates"] if c["holds"]]}) + "\n" for r in records))
    scored = runner.invoke(cli, ["score", str(selection), "--against", str(folder), "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["metrics"]["precision"] in (1.0, None)

    refused = runner.invoke(cli, [*args, "--llm", "smollm2-135m"])
    assert refused.exit_code == 1
    assert refused.exception.line() == ("field 'llm': --artifact lexical asks no LLM (leave out "
                                        "--llm and --answer-extractor)")
