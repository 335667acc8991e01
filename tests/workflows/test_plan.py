"""`labeler build --dry-run` (labeler/workflows/plan.py): the plan as a table, no model loaded,
nothing written."""

from __future__ import annotations

from click.testing import CliRunner

from labeler.cli import cli


def test_a_dry_run_prints_the_plan_loads_no_model_and_writes_nothing(tmp_path, no_loads):
    out = tmp_path / "out"
    args = ["build", "--out", str(out), "--dataset", "nq-sample", "--llm",
            "nonexistent-org/no-such-model", "--limit", "10", "--k", "5", "--encoder", "minilm",
            "--dry-run"]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "200"})  # rows unwrapped

    assert result.exit_code == 0, result.output
    assert no_loads == [] and not out.exists()
    for row in ("queries", "corpus passages", "embeddings to compute", "upper bound: queries × k",
                "closed-book", "estimate from characters", "in the call cache"):
        assert row in result.output, row


def test_a_dry_run_itemises_the_seer_and_rubric_calls(tmp_path, no_loads):
    def rows(*args: str) -> dict[str, str]:
        result = CliRunner().invoke(cli, ["build", "--out", str(tmp_path / "out"), "--llm",
                                          "smollm2-135m", "--limit", "3", *args, "--dry-run"],
                                    env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        cells = [[c.strip() for c in line.split("│")[1:-1]] for line in result.output.splitlines()
                 if line.startswith("│")]
        return {c[0]: c[1] for c in cells if len(c) == 3}

    seer = rows("--artifact", "seer", "--dataset", "nq-sample", "--encoder", "minilm")
    assert seer["LLM calls: evidence extractions"] == "30"  # 3 queries × SEER's 10 samples
    assert seer["LLM calls: answer likelihoods (helpfulness)"] == "33"
    rubric = rows("--artifact", "rubric", "--dataset", "cisi-sample")
    assert rubric["LLM calls: rubric questions"] == "3"
    assert rubric["LLM calls: P(yes)"] == "600"  # 3 queries × 20 candidates × 10 questions
    assert "requests to the server, per served LLM" not in rubric
    # a served model: one request per call, one per choice (8 spellings) of a P(yes); no
    # server asked
    served = rows("--artifact", "rubric", "--dataset", "cisi-sample", "--backend", "openai",
                  "--base-url", "http://127.0.0.1:9/v1")
    assert served["requests to the server, per served LLM"] == "4,803"  # 3 + 600 × 8
    assert no_loads == [] and not (tmp_path / "out").exists()
