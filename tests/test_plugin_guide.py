"""docs/plugins.md, run: its package written from the page's files, built and installed by pip
(into a folder of this test, not the shared environment), listed by `labeler plugins`, tested by
its own test, built with, validated and scored against, as the page's commands say."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from labeler.cli import cli

ROOT = Path(__file__).parents[1]
GUIDE = ROOT / "docs" / "plugins.md"
V1 = "out/reads/nq-sample/smollm2-135m/v1"


def guide_files() -> dict[str, str]:
    """path -> text of each fenced block of the page whose info string names a `file=`."""
    return {m["path"]: m["text"] for m in re.finditer(
        r"^```\w+ file=(?P<path>\S+)\n(?P<text>.*?)^```$", GUIDE.read_text(encoding="utf-8"),
        re.MULTILINE | re.DOTALL)}


def guide_commands() -> list[str]:
    """The commands of the page's ```bash blocks."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", GUIDE.read_text(encoding="utf-8"),
                        re.MULTILINE | re.DOTALL)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_the_guides_package_is_installed_listed_tested_built_validated_and_scored(
        tmp_path, monkeypatch, loads):
    files = guide_files()
    assert {"labeler-reads/pyproject.toml", "labeler-reads/labeler_reads/task.py",
            "labeler-reads/labeler_reads/schemas/reads.schema.json",
            "labeler-reads/labeler_reads/cards/reads.md.j2",
            "labeler-reads/tests/test_reads.py"} <= set(files)
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    commands = guide_commands()
    assert {"pip install ./labeler-reads", "labeler plugins",
            "python -m pytest labeler-reads/tests"} <= set(commands)
    build, validate, score = (next(c for c in commands if c.startswith(f"labeler {verb} ")
                                   and "reads" in c) for verb in ("build", "validate", "score"))

    # `pip install ./labeler-reads`, into a folder of this test: a real build of the package
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(site),
                    "./labeler-reads"], cwd=tmp_path, check=True)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    listed = runner.invoke(cli, ["plugins", "--json"])
    assert listed.exit_code == 0, listed.output
    assert {"package": "labeler-reads", "version": "0.1.0", "group": "labeler.tasks",
            "name": "reads", "value": "labeler_reads.task:ReadsTask", "error": None} \
        in json.loads(listed.stdout)["plugins"]

    own = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "labeler-reads/tests"], check=False, cwd=tmp_path,
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [str(site), str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert own.returncode == 0, own.stdout + own.stderr

    (tmp_path / "my_selection.jsonl").write_text("")  # made below, from the build's records
    for command in (build, validate):
        result = runner.invoke(cli, shlex.split(command)[1:])
        assert result.exit_code == 0, f"{command}\n{result.output}"
    records = [json.loads(line) for line in (tmp_path / V1 / "data-00000.jsonl").open()]
    assert len(records) == 2 and all(r["candidates"] for r in records)
    (tmp_path / "my_selection.jsonl").write_text("".join(
        json.dumps({"qid": r["qid"], "selected": [r["candidates"][0]["pid"]]}) + "\n"
        for r in records))
    scored = runner.invoke(cli, [*shlex.split(score)[1:], "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["counts"]["queries"] == 2
