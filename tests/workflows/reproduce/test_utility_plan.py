"""`labeler reproduce utility-paper`'s steps, checks and --dry-run, with no model loaded."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.nq2 import TOP3_RUN

from labeler.cli import cli
from labeler.errors import InputError, UnknownNameError
from labeler.judges.methods import METHODS
from labeler.llm.config import LLMConfig
from labeler.workflows.reproduce.utility_paper import reproduce
from labeler.workflows.reproduce.utility_plan import plan_rows
from labeler.workflows.reproduce.utility_steps import ReproduceConfig, steps


def test_the_steps_are_every_pool_and_every_judge_method_with_and_without_the_answer(tmp_path):
    config = ReproduceConfig(datasets=("nq-sample", "hotpotqa"))
    plan = steps(config, ["smollm2-135m", "qwen3-8b"], tmp_path)
    builds = {(s.dataset, s.pool) for s in plan if s.what == "build"}
    assert builds == {("nq-sample", "rp"), ("nq-sample", "hgp"), ("nq-sample", "mcp"),
                      ("hotpotqa", "rp")}  # the paper labels hotpotqa on rp only
    judged = {(s.method, s.with_answer) for s in plan if s.what == "judge"}
    assert judged == {(name, answer) for name, m in METHODS.items()
                      for answer in (False, True) if answer is False or m.with_answer}
    assert [s.llm for s in plan if s.method == "retrieval"] == [None, None]  # asks no LLM
    [compared] = [s for s in plan if s.what == "compare"]
    assert (compared.dataset, compared.llms) == ("nq-sample", ("smollm2-135m", "qwen3-8b"))
    assert not any(s.done() for s in plan)


def test_bad_input_fails_before_any_model_loads(tmp_path, monkeypatch):
    import labeler.llm

    monkeypatch.setattr(labeler.llm, "load_backend", lambda *a, **k: pytest.fail("loaded"))
    with pytest.raises(InputError, match="--run holds one dataset's queries"):
        ReproduceConfig(datasets=("nq-sample", "tq"), run="run.trec")
    with pytest.raises(UnknownNameError, match="smollm2-136m"):
        reproduce(ReproduceConfig(datasets=("nq-sample",)), [LLMConfig("smollm2-136m")],
                  out=tmp_path)
    with pytest.raises(InputError, match="named twice"):
        reproduce(ReproduceConfig(datasets=("nq-sample",)),
                  [LLMConfig("smollm2-135m"), LLMConfig("smollm2-135m")], out=tmp_path)
    with pytest.raises(UnknownNameError, match="nq-sampel"):
        reproduce(ReproduceConfig(datasets=("nq-sampel",)), [LLMConfig("smollm2-135m")],
                  out=tmp_path)
    assert not (tmp_path / "utility-paper").exists()


def test_the_dry_run_prints_every_step_and_writes_nothing(tmp_path):
    run = tmp_path / "top3.trec"  # the real top 3 of the first two queries
    run.write_text("".join(line for line in TOP3_RUN.read_text().splitlines(keepends=True)
                           if not line.startswith("nq-open-dev-oracle-2 ")))
    options = ["--dataset", "nq-sample", "--llm", "smollm2-135m", "--limit", "2", "--k", "3",
               "--run", str(run), "--out", str(tmp_path / "out"),
               "--cache-dir", str(tmp_path / "calls"), "--dry-run"]
    result = CliRunner().invoke(cli, ["reproduce", "utility-paper", *options])
    assert result.exit_code == 0, result.output
    config = ReproduceConfig(datasets=("nq-sample",), limit=2, k=3, run=str(run),
                             max_new_tokens=32)
    rows = {step: count for step, count, _ in plan_rows(
        config, [LLMConfig("smollm2-135m")], out=tmp_path / "out", cache_dir=tmp_path / "calls")}
    for pool in ("rp", "hgp", "mcp"):
        assert rows[f"nq-sample {pool}: build utility"] == "0 of 1 LLMs done"
    # pvs with the answer: a judgment per candidate (2 x 3) and a pseudo-answer per query
    assert rows["nq-sample: judge pvs with answer (smollm2-135m)"].startswith("8 calls, ~")
    assert rows["nq-sample: judge lvr (smollm2-135m)"].startswith("2 calls, ~")  # listwise
    assert rows["nq-sample: judge retrieval (no LLM)"].startswith("0 calls")
    assert rows["nq-sample: compare mcp"].startswith("2 calls")
    assert not (tmp_path / "out").exists()

