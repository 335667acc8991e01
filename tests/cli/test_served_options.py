"""Every command that runs an LLM takes the openai backend's options (--base-url,
--prompt-format, --concurrency, --served-model, the rate limits and prices) as `build` does, from the one declaration in
labeler/cli/options.py, and passes them on to the model."""

from __future__ import annotations

import click
from click.testing import CliRunner
from support.nq2 import TOP3_RUN

from labeler.cli import cli

SERVED = ("base_url", "prompt_format", "concurrency", "served_model", "max_rps", "max_tpm",
          "price_in", "price_out")
#: a port nothing listens on: the openai backend's start-up probe fails at once
CLOSED = "http://127.0.0.1:9/v1"


def _commands(group: click.Group, ctx: click.Context, prefix: str = ""):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from _commands(command, ctx, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


def test_every_command_with_a_backend_takes_the_served_options_as_build_does():
    ctx = click.Context(cli)
    helps = {}
    for name, command in _commands(cli, ctx):
        params = {p.name: p for p in command.params}
        if "backend" not in params:
            continue
        assert all(option in params for option in SERVED), name
        helps[name] = tuple(params[option].help for option in SERVED)
    assert {"build", "judge", "score", "compare", "reproduce utility-paper",
            "reproduce seer-paper", "reproduce rubric-experiment"} <= set(helps)
    assert len(set(helps.values())) == 1, helps  # one declaration, not copies


def test_judge_and_reproduce_ask_the_server_their_base_url_names(tmp_path):
    judged = CliRunner().invoke(cli, [
        "judge", "--dataset", "nq-sample", "--limit", "3", "--k", "3", "--run", str(TOP3_RUN),
        "--method", "pvs", "--llm", "smollm2-135m", "--backend", "openai", "--base-url", CLOSED,
        "--out", str(tmp_path / "pvs.jsonl"), "--cache-dir", str(tmp_path / "calls")])
    assert f"cannot reach the server at {CLOSED}" in str(judged.exception), judged.exception

    planned = CliRunner().invoke(cli, [
        "reproduce", "utility-paper", "--dataset", "nq-sample", "--llm", "smollm2-135m",
        "--limit", "3", "--k", "3", "--run", str(TOP3_RUN), "--backend", "openai",
        "--base-url", CLOSED, "--concurrency", "4", "--out", str(tmp_path / "out"),
        "--cache-dir", str(tmp_path / "calls"), "--dry-run"], env={"COLUMNS": "200"})
    assert planned.exit_code == 0, planned.output
    assert "requests to the server, per served LLM" in planned.output
