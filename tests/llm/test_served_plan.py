"""`labeler build --dry-run` counts a served model's requests as the server receives them: a
P(yes) of the rubric's eight yes/no spellings is eight requests (one per first token scored
from vLLM's prompt_logprobs), SEER's samples of a prompt are one request (n), its conciseness
asks one full-length answer a query, and a utility build's repeated prompts are one request
(its human-gold prompt is the one-passage prompt of the gold passage where that is a
candidate; its utilitarian prompt the closed-book, a one-passage or the all-passage one over
two candidates). Each tiny build below runs through the session's `vllm serve` with a fresh
call cache, and the proxy's count of answered requests equals the plan's row
(tests/support/served.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from support.nq2 import cut_run
from support.served import API_KEY

from labeler.cli import cli

pytestmark = pytest.mark.vllm

ROW = "requests to the server, per served LLM"


def first_query(root: Path) -> Path:
    """The real top-3 run cut to nq-sample's first query."""
    run = root / "first.trec"
    run.write_text("".join(line for line in cut_run(root).read_text().splitlines(True)
                           if line.startswith("nq-open-dev-oracle-0 ")))
    return run


def planned_and_sent(proxy, root: Path, session_cache: str, *args: str) -> tuple[int, int]:
    """(the dry run's planned requests, the requests the build then sent) for `args`."""
    (root / "calls").mkdir(parents=True)
    (root / "calls/models").symlink_to(Path(session_cache) / "models")
    command = ["build", "--llm", "smollm2-135m", "--backend", "openai", "--base-url",
               proxy.base_url, *args, "--cache-dir", str(root / "calls"),
               "--out", str(root / "out")]
    env = {"OPENAI_API_KEY": API_KEY, "COLUMNS": "250"}
    plan = CliRunner().invoke(cli, [*command, "--dry-run"], env=env)
    assert plan.exit_code == 0, plan.output
    [row] = [line for line in plan.output.splitlines() if ROW in line]
    planned = int(row.split("│")[2].strip().replace(",", ""))
    before = proxy.total()
    built = CliRunner().invoke(cli, command, env=env)
    assert built.exit_code == 0, built.output
    return planned, proxy.total() - before


@pytest.mark.parametrize("artifact, args", [
    ("utility", ("--dataset", "nq-sample", "--limit", "1", "--k", "2", "--max-new-tokens",
                 "8")),
    ("seer", ("--dataset", "nq-sample", "--limit", "1", "--k", "2", "--samples", "2",
              "--max-new-tokens", "8")),
    ("rubric", ("--dataset", "cisi-sample", "--limit", "1", "--rerank-k", "2",
                "--max-questions", "1")),
])
def test_the_dry_run_counts_the_requests_the_server_then_receives(
        vllm_server, session_cache, tmp_path, artifact, args):
    _, proxy = vllm_server
    run = () if artifact == "rubric" else ("--run", str(first_query(tmp_path)))
    planned, sent = planned_and_sent(proxy, tmp_path, session_cache, "--artifact", artifact,
                                     *args, *run)
    assert sent == planned, (artifact, planned, sent)
