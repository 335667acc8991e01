"""`labeler reproduce seer-paper` on the bundled nq-sample with the bundled SmolLM2: the pairs of
the session's SEER build (two queries over their real MiniLM top 2, M = 4: its call cache
serves them), one LoRA step, two test queries. Every table and the figure are written, each
number is what the separate commands give, a rerun runs no step; SEER's AlignScore preset
fails in one line before any work offline, and the dry run loads and writes nothing."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import cli, main
from labeler.train.config import TrainConfig

OPTIONS = ["reproduce", "seer-paper", "--dataset", "nq-sample", "--llm", "smollm2-135m",
           "--train-limit", "2", "--limit", "2", "--k", "2", "--samples", "4",
           "--max-new-tokens", "40"]
#: one optimizer step of one pair (a step of SEER's 16 × 2 pairs takes minutes on 2 cores)
ONE_STEP = ["--steps", "1", "--train-batch-size", "1", "--gradient-accumulation", "1"]
FILES = ("table1.md", "compression.md", "table1.png", "results.json", "README.md")


def test_the_dry_run_plans_every_step_and_loads_nothing(tmp_path, no_loads):
    result = CliRunner().invoke(cli, [*OPTIONS, "--faithfulness", "llm", "--out",
                                      str(tmp_path / "out"), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    steps = [row["step"] for row in json.loads(result.stdout)["plan"]]
    assert steps[:5] == ["nq-sample: build seer pairs (training split)",
                         "nq-sample: train-extractor on the pairs",
                         "nq-sample: build seer reference (test split)",
                         "nq-sample: evidence by the base extractor",
                         "nq-sample: evidence by the trained extractor"]
    assert not no_loads and not (tmp_path / "out").exists()


def test_the_dry_run_names_seers_corpus_and_test_splits_with_their_counts(tmp_path, no_loads):
    result = CliRunner().invoke(cli, [
        "reproduce", "seer-paper", "--dataset", "nq", "--dataset", "tq", "--llm", "smollm2-135m",
        "--faithfulness", "llm", "--out", str(tmp_path / "out"), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    plan = {row["step"]: row for row in json.loads(result.stdout)["plan"]}
    # DPR's NQ-open and TriviaQA test splits (FlashRAG's nq/test.jsonl, triviaqa/test.jsonl),
    # counted from their pins without a download; SEER's corpus, DPR's own passages
    assert plan["nq: build seer reference (test split)"]["count"] == \
        "nq-open-test, at most 3,610 queries × 1 sample, top 5 of wiki-dpr"
    assert plan["tq: build seer reference (test split)"]["count"] == \
        "tq-test, 11,313 queries × 1 sample, top 5 of wiki-dpr"
    assert plan["tq: build seer pairs (training split)"]["count"] == \
        "tq-train, 78,785 queries × 10 samples, top 5 of wiki-dpr"
    assert not no_loads and not (tmp_path / "out").exists()


def test_the_alignscore_preset_fails_in_one_line_before_any_work(tmp_path, monkeypatch,
                                                                  capsys, no_loads):
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["labeler", *OPTIONS, "--out", str(out)])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.count("\n") == 1 and err.startswith("error:"), err
    assert "AlignScore" in err and "--faithfulness llm" in err
    assert not no_loads and not out.exists()


@pytest.mark.slow
def test_reproduce_writes_table1_as_the_separate_commands_give(seer2_build, loads, tmp_path):
    root = seer2_build.parents[4]  # the session build's root: its run and call cache
    calls = tmp_path / "calls"
    shutil.copytree(root / "calls", calls)
    options = [*OPTIONS, *ONE_STEP, "--faithfulness", "llm", "--run", str(root / "top3.trec"),
               "--out", str(tmp_path / "out"), "--cache-dir", str(calls), "--json"]
    first = CliRunner().invoke(cli, options)
    assert first.exit_code == 0, first.output
    done = json.loads(first.stdout)
    assert (done["ran"], done["skipped"]) == (5, 0)
    report = Path(done["path"])
    assert all((report / name).stat().st_size > 0 for name in FILES)
    assert (report / "table1.png").read_bytes().startswith(b"\x89PNG")
    rows = json.loads((report / "results.json").read_text())["rows"]

    # the pairs are the separate build's, on the same options
    work = tmp_path / "out" / "seer-paper" / "nq-sample"
    pairs = work / "pairs" / "seer" / "nq-sample" / "smollm2-135m" / "v1"
    assert _pairs(pairs) == _pairs(seer2_build)
    # the extractor is train-extractor's on those pairs, LoRA by default
    training = json.loads((work / "extractor" / "labeler-training.json").read_text())
    assert training["artifact"] == str(pairs.resolve()) and training["steps"] == 1
    assert training["config"] == asdict(TrainConfig(max_steps=1, batch_size=1,
                                                    gradient_accumulation=1))
    assert training["config"]["lora"] is True

    # Table 1 is `labeler score --rag` of the trained evidence, the base's as baseline
    reference = work / "test" / "seer" / "nq-sample" / "smollm2-135m" / "v1"
    separate = CliRunner().invoke(cli, [
        "score", str(work / "evidence" / "trained.jsonl"), "--against", str(reference),
        "--baseline", str(work / "evidence" / "base.jsonl"), "--rag", "--llm", "smollm2-135m",
        "--max-new-tokens", "40", "--cache-dir", str(calls), "--json"])
    assert separate.exit_code == 0, separate.output
    qa = {row["method"]: row for row in json.loads(separate.stdout)["qa"]["rows"]}
    table = {r["method"]: r for r in rows if "method" in r}
    assert list(table) == ["Zero", "Full", "base", "trained"]
    for method, row in table.items():
        assert (row["score"], row["tokens"], row["queries"]) == (
            qa[method]["em"], qa[method]["tokens"], 2)
    ratios = {r["compression"]: r["ratio"] for r in rows if "compression" in r}
    assert ratios["trained"] == qa["Full"]["tokens"] / qa["trained"]["tokens"]
    assert table["Full"]["paper_Llama2"] == [0.4382, 804]  # NQ's published cell
    assert "n/a" in (report / "table1.md").read_text()  # the paper has no base row

    again = CliRunner().invoke(cli, options)
    assert again.exit_code == 0, again.output
    assert (json.loads(again.stdout)["ran"], json.loads(again.stdout)["skipped"]) == (0, 5)
    assert json.loads((report.with_name("v2") / "results.json").read_text())["rows"] == rows


def _pairs(folder: Path) -> list[dict]:
    return [json.loads(line) for file in sorted(folder.glob("pairs-*.jsonl"))
            for line in file.open()]
