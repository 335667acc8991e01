"""`labeler score --against hub:REPO:CONFIG@TAG` scores through the real pull code."""

from __future__ import annotations

import json

from click.testing import CliRunner

from labeler.artifacts import load_artifact
from labeler.cli import cli
from labeler.errors import HubError
from labeler.hub import push

REPO = "lab/utility-labels"
CONFIG = "utility.nq-sample.smollm2-135m"


def test_a_selection_scores_the_same_against_the_hub_and_the_local_version(hub, write, tmp_path):
    v1 = write()
    push([v1], repo=REPO)
    # select each query's utilitarian passages, plus its first candidate (each pid once)
    submission = tmp_path / "selection.jsonl"
    with submission.open("w", encoding="utf-8") as f:
        for record in load_artifact(v1).records:
            chosen = list(dict.fromkeys(
                record["utility_pids"] + [record["candidates"][0]["pid"]]))
            f.write(json.dumps({"qid": record["qid"], "selected": chosen}) + "\n")

    def score(against: str) -> dict:
        result = CliRunner().invoke(cli, ["score", str(submission), "--against", against, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["metrics"]

    remote = score(f"hub:{REPO}:{CONFIG}@{CONFIG}.v1")
    assert remote == score(str(v1))
    assert remote["recall"] == 1.0  # every utility pid was selected


def test_an_unknown_hub_tag_fails_with_one_line(hub, write, tmp_path):
    push([write()], repo=REPO)
    submission = tmp_path / "selection.jsonl"
    submission.write_text('{"qid": "q", "selected": []}\n', encoding="utf-8")

    result = CliRunner().invoke(
        cli, ["score", str(submission), "--against", f"hub:{REPO}:{CONFIG}@{CONFIG}.v9"])

    assert isinstance(result.exception, HubError)  # the CLI edge prints it as one line, exit 1
    assert str(result.exception) == f"{REPO}: no revision '{CONFIG}.v9'"
