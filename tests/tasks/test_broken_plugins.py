"""Installed plugins that cannot be loaded (issue 49): a missing module, an ImportError at
import, a value without ':', something not a class, `sys.exit` at import. Each is skipped with
one warning naming its package and error, every other command works, asking for one by name
is one error line, and `labeler plugins` lists them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.plugins import install

import labeler.plugins
from labeler.cli import cli

#: (group, name, entry point, the error `labeler plugins` says)
BROKEN = [
    ("labeler.tasks", "missing", "labeler_gone.task:Task",
     "ModuleNotFoundError: No module named 'labeler_gone'"),
    ("labeler.tasks", "importerror", "labeler_broken.boom:Task", "ImportError: boom at import"),
    ("labeler.tasks", "nocolon", "labeler_broken.plain", ("ValueError: 'labeler_broken.plain' is "
                                                         "not 'module:attribute'")),
    ("labeler.tasks", "notaclass", "labeler_broken.plain:task",
     "'labeler_broken.plain:task' is a function, not a subclass of labeler.tasks.base.Task"),
    ("labeler.tasks", "exits", "labeler_broken.leave:Task", "it called sys.exit(3) at import"),
    ("labeler.backends", "exits", "labeler_broken.leave:Backend",
     "it called sys.exit(3) at import"),
    ("labeler.backends", "notabackend", "labeler_broken.plain:Thing",
     "'labeler_broken.plain:Thing' is the class Thing, not a subclass of labeler.llm.base.Backend"),
    ("labeler.executors", "missing", "labeler_gone.run:Executor",
     "ModuleNotFoundError: No module named 'labeler_gone'"),
]


def _installed(tmp_path, monkeypatch, name: str, modules: dict[str, str],
               points: dict[str, dict[str, str]]) -> None:
    """The package `name` (labeler-x, importable as labeler_x) with `modules` ({file stem:
    source}), installed with entry `points` ({group: {name: "module:attribute"}}); each
    plugin failure warned anew."""
    package = tmp_path / "src" / name.replace("-", "_")
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for stem, source in modules.items():
        (package / f"{stem}.py").write_text(source)
    monkeypatch.syspath_prepend(str(package.parent))
    install(tmp_path / "site", {"name": name, "version": "0.1", "entry-points": points},
            monkeypatch)
    monkeypatch.setattr(labeler.plugins, "_WARNED", set())  # each failure said once a process


@pytest.fixture
def broken(tmp_path, monkeypatch):
    """The package labeler-broken, installed, declaring each of BROKEN."""
    points: dict = {}
    for group, name, value, _ in BROKEN:
        points.setdefault(group, {})[name] = value
    _installed(tmp_path, monkeypatch, "labeler-broken", {
        "boom": 'raise ImportError("boom at import")\n',
        "leave": "import sys\n\nsys.exit(3)\n",
        "plain": "def task():\n    pass\n\n\nclass Thing:\n    pass\n"}, points)


@pytest.mark.parametrize("command", [["build", "--help"], ["judge", "--help"],
                                     ["score", "--help"], ["reproduce", "utility-paper", "--help"],
                                     ["retrieve", "--help"], ["models"]])
def test_every_other_command_works_and_warns_once_a_plugin(broken, command):
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    warned = [line for line in result.output.splitlines() if line.startswith("warning: skipping")]
    assert len(warned) == len(set(warned))
    for line in warned:
        assert "of package labeler-broken: " in line
    if command[-1] == "--help" and command[0] != "retrieve":  # their --dtype help: backends'
        assert "warning: skipping the labeler.backends plugin 'exits' of package "\
               "labeler-broken: it called sys.exit(3) at import" in warned, result.output


def test_a_build_validate_and_score_run_beside_them(broken, write, records, tmp_path):
    runner = CliRunner()
    planned = runner.invoke(cli, ["build", "--dataset", "nq-sample", "--llm", "smollm2-135m",
                                  "--limit", "1", "--pool", "hgp", "--dry-run",
                                  "--out", str(tmp_path / "out")])
    assert planned.exit_code == 0, planned.output
    version = write()
    assert runner.invoke(cli, ["validate", str(version)]).exit_code == 0
    selection = tmp_path / "selection.jsonl"
    selection.write_text("".join(json.dumps({"qid": r["qid"], "selected": []}) + "\n"
                                 for r in records))
    scored = runner.invoke(cli, ["score", str(selection), "--against", str(version)])
    assert scored.exit_code == 0, scored.output


@pytest.mark.parametrize(("args", "line"), [
    (["build", "--artifact", "exits"], ("the labeler.tasks plugin 'exits' of package "
     "labeler-broken cannot be loaded: it called sys.exit(3) at import")),
    (["build", "--backend", "notabackend"], ("the labeler.backends plugin 'notabackend' of "
     "package labeler-broken cannot be loaded: 'labeler_broken.plain:Thing' is the class Thing, "
     "not a subclass of labeler.llm.base.Backend")),
    (["build", "--executor", "missing"], ("the labeler.executors plugin 'missing' of package "
     "labeler-broken cannot be loaded: ModuleNotFoundError: No module named 'labeler_gone'")),
])
def test_asking_for_a_broken_plugin_by_name_is_one_error_line(broken, tmp_path, args, line):
    result = CliRunner().invoke(cli, [*args, "--dataset", "nq-sample", "--llm", "smollm2-135m",
                                      "--limit", "1", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert result.exception.line() == f"{line} (fix or uninstall the package; `labeler " \
                                      "plugins` lists what is installed)"
    assert not (tmp_path / "out").exists()


def test_labeler_plugins_names_each_and_its_error(broken):
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    listed = {(p["group"], p["name"]): p for p in json.loads(result.stdout)["plugins"]}
    for group, name, value, error in BROKEN:
        assert listed[group, name] == {"package": "labeler-broken", "version": "0.1",
                                       "group": group, "name": name, "value": value,
                                       "error": error}
    shown = CliRunner().invoke(cli, ["plugins"]).output
    assert "8 plugin(s) in 1 package(s); 8 fail to load" in shown


def test_a_plugin_taking_a_built_in_name_is_listed_unused_and_its_prints_leave_stdout(
        tmp_path, monkeypatch):
    _installed(tmp_path, monkeypatch, "labeler-loud", {
        "task": 'print("hello from a plugin")\nfrom labeler.tasks.base import Task\n\n\n'
                "class Loud(Task):\n    pass\n"}, {
        "labeler.tasks": {"utility": "labeler_loud.task:Loud", "loud": "labeler_loud.task:Loud"},
        "labeler.backends": {"hf": "labeler_loud.task:Loud"}})
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    listed = {p["name"]: p["error"] for p in json.loads(result.stdout)["plugins"]}
    assert listed == {"loud": None,
                      "utility": "the name 'utility' is labeler's own; this one is not used",
                      "hf": "the name 'hf' is labeler's own; this one is not used"}
    assert "hello from a plugin" in result.stderr
    helped = CliRunner().invoke(cli, ["judge", "--help"])  # its --dtype help reads backends
    assert "warning: skipping the labeler.backends plugin 'hf' of package labeler-loud: the " \
           "name 'hf' is labeler's own; this one is not used" in helped.output


def test_a_keyboardinterrupt_a_plugin_raises_is_skipped_but_a_pressed_ctrl_c_stops(
        tmp_path, monkeypatch):
    _installed(tmp_path, monkeypatch, "labeler-interrupts", {
        "raises": "raise KeyboardInterrupt\n",
        "pressed": "import os\nimport signal\nimport time\n\n"
                   "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)\n"},
        {"labeler.tasks": {"raises": "labeler_interrupts.raises:Task"}})

    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    assert [p["error"] for p in json.loads(result.stdout)["plugins"]] == ["KeyboardInterrupt"]
    with pytest.raises(KeyboardInterrupt):
        labeler.plugins.load_plugin("labeler.tasks", "pressed", "labeler_interrupts.pressed:Task",
                                    "labeler-interrupts")


def test_a_plugins_error_is_warned_with_its_escape_sequence_escaped(tmp_path, monkeypatch):
    _installed(tmp_path, monkeypatch, "labeler-ansi",
               {"boom": 'raise ImportError("\\x1b]0;owned\\x07 [red]x")\n'},
               {"labeler.backends": {"ansi": "labeler_ansi.boom:Backend"}})

    result = CliRunner().invoke(cli, ["judge", "--help"])

    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output
    assert r"of package labeler-ansi: ImportError: \x1b]0;owned\x07 [red]x" in result.output
