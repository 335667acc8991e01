"""One set of conventions on every command, as batch jobs meet them: the output option is
`--out`, every command can print its result as `--json` (stdout holding that document only),
and long work says where it is on stderr when stderr is a file."""

from __future__ import annotations

import json
from pathlib import Path

import click
from click.testing import CliRunner

from labeler.cli import COMMANDS, cli
from labeler.lazy import load_entry

#: commands that write a file or folder the user names
WRITERS = {"build", "retrieve", "judge", "compare", "analyze perplexity",
           "reproduce utility-paper", "reproduce rubric-experiment", "reproduce seer-paper",
           "train-extractor", "pull",
           "push", "view", "merge-reviews"}
#: a real utility record of nq-sample by SmolLM2 (tests/artifacts/fixtures/README.md)
RECORDS = Path(__file__).parents[1] / "artifacts" / "fixtures" / "utility_nq_sample_smollm2.jsonl"


def _leaves() -> dict[str, click.Command]:
    """Every command a user runs, by its path: `cache stats`, `build`, ..."""
    found = {}
    todo = [(name, load_entry(target)) for name, (target, _) in COMMANDS.items()]
    while todo:
        name, command = todo.pop()
        if isinstance(command, click.Group):
            todo += [(f"{name} {sub}", command.commands[sub]) for sub in command.commands]
        else:
            found[name] = command
    return found


def _options(command: click.Command) -> set[str]:
    return {opt for param in command.params for opt in getattr(param, "opts", ())}


def test_every_command_writes_to_out_and_prints_json():
    leaves = _leaves()
    assert WRITERS <= set(leaves)
    for name, command in leaves.items():
        options = _options(command)
        assert "--output" not in options, name
        assert ("--out" in options) == (name in WRITERS), name
        assert "--json" in options, f"labeler {name} prints a table but takes no --json"


def test_json_is_the_only_thing_on_stdout(tmp_path):
    data = tmp_path / "records.jsonl"
    data.write_bytes(RECORDS.read_bytes())
    runner = CliRunner()
    models = runner.invoke(cli, ["models", "--json"])
    assert models.exit_code == 0, models.output
    assert {"alias": "smollm2-135m", "source": "bundled (offline)"}.items() <= \
        json.loads(models.stdout)[0].items()
    stats = runner.invoke(cli, ["cache", "stats", "--json", "--cache-dir", tmp_path / "calls"])
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.stdout) | {"location": None} == {
        "location": None, "entries": 0, "size_bytes": 0, "hits": 0, "misses": 0,
        "hit_rate": None, "by_model": []}
    valid = runner.invoke(cli, ["validate", str(data), "--schema", "utility", "--json"])
    assert valid.exit_code == 0, valid.output
    assert json.loads(valid.stdout)["files"] == [
        {"file": str(data), "schema": "utility", "lines": 3, "problems": [], "more": 0,
         "unchecked": 0}]
    data.write_text(data.read_text().replace('"qid"', '"query_id"', 1))
    bad = runner.invoke(cli, ["validate", str(data), "--schema", "utility", "--json"])
    assert bad.exit_code == 1
    report = json.loads(bad.stdout)  # the problems inside the document, not before it
    problems = report["files"][0]["problems"]
    assert report["problems"] == len(problems) > 0
    assert all(problem.startswith(f"{data}:1:") for problem in problems)



def test_off_a_terminal_a_table_cuts_no_path_or_name(tmp_path):
    """A log or a pipe gets each cell on one line, so a path in it can be copied: the bundled
    model's path (over 80 columns here) and `validate`'s title naming a deep folder."""
    from labeler.llm.models import resolve_model

    deep = tmp_path / ("a-folder-name-long-enough-to-pass-eighty-columns-" * 2) / "records.jsonl"
    deep.parent.mkdir()
    deep.write_bytes(RECORDS.read_bytes())
    runner = CliRunner()

    models = runner.invoke(cli, ["models"])
    valid = runner.invoke(cli, ["validate", str(deep), "--schema", "utility"])

    assert models.exit_code == valid.exit_code == 0, models.output + valid.output
    path = resolve_model("smollm2-135m").model_id
    assert len(path) > 80
    assert any(f"│ smollm2-135m   │ {path} │" in line for line in models.stdout.splitlines())
    assert any(f"validate {deep}" in line for line in valid.stdout.splitlines())
