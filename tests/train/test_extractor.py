"""Training a SEER artifact's extractor: the card's code as rendered, the folder it writes taken
by `labeler build --extractor`, and bad input refused with one `error:` line before any model
loads."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys

import pytest
from click.testing import CliRunner
from support.seer2 import SEER2_OPTIONS

from labeler.artifacts import write_artifact
from labeler.cli import cli, main
from labeler.paths import umask_mode
from labeler.tasks import load_task

UTILITY = "tests/scoring/fixtures/utility-v1"  # a real utility artifact: no pairs
#: what the test puts in the card's code: two steps of one pair each (on 2 CPU cores a step
#: of SEER's 16 x 2 pairs of this build takes minutes)
TWO_STEPS = ("TrainConfig(max_steps=2, batch_size=1, gradient_accumulation=1, "
             "gradient_checkpointing=False)")


@pytest.fixture(scope="module")
def card_trained(seer2_build, session_cache, tmp_path_factory):
    """The card's training code block, run as rendered in the SEER build's README.md with the
    artifact's folder, an output folder and two steps put in; (its output folder, what it
    printed). The bundled model is read from the session's converted copy."""
    out = tmp_path_factory.mktemp("card-trained") / "seer-extractor"
    code = _training_code((seer2_build / "README.md").read_text())
    for old, new in (('"path/to/this/folder"', repr(str(seer2_build))),
                     ('"seer-extractor"', repr(str(out))), ("TrainConfig()", TWO_STEPS)):
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setenv("LABELER_CACHE_DIR", session_cache)
        exec(compile(code, "card", "exec"), {})  # noqa: S102 - the card's code as rendered
    return out, printed.getvalue()


def test_the_cards_training_code_runs_as_rendered(card_trained, seer2_build):
    out, printed = card_trained
    assert re.fullmatch(r"2 steps on 12 pairs, final loss \d+\.\d{4}\n", printed), printed
    training = json.loads((out / "labeler-training.json").read_text())
    assert (training["steps"], training["pairs"], len(training["losses"])) == (2, 12, 2)
    assert training["artifact"] == str(seer2_build.resolve())
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in out.iterdir()}
    assert not list(out.parent.glob(".partial-*"))
    assert {p.stat().st_mode & 0o777 for p in out.iterdir()} == {umask_mode(0o666)}


def test_a_seer_build_takes_the_trained_extractor(card_trained, seer2_build, loads, tmp_path):
    """One query, two samples of at most 16 tokens, extracted by the trained folder."""
    out, _ = card_trained
    options = list(SEER2_OPTIONS)
    for name, value in (("--limit", "1"), ("--samples", "2"), ("--max-new-tokens", "16")):
        options[options.index(name) + 1] = value
    lines = (seer2_build.parents[4] / "top3.trec").read_text().splitlines(keepends=True)
    run = tmp_path / "top3.trec"  # the first query's passages alone
    run.write_text("".join(line for line in lines if line.split()[0] == lines[0].split()[0]))
    result = CliRunner().invoke(cli, ["build", "--llm", "smollm2-135m", *options,
                                      "--extractor", str(out), "--run", str(run),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "seer" / "nq-sample" / "smollm2-135m" / "v1"
    [record] = [json.loads(line) for line in (folder / "data-00000.jsonl").open()]
    assert record["extractor"] == out.name and record["samples"] == 2
    assert json.loads((folder / "manifest.json").read_text())["config"]["extractor"] == out.name


def test_bad_input_is_one_error_line_before_any_model_loads(tmp_path, monkeypatch, capsys):
    empty = write_artifact([], out=tmp_path / "built", kind=load_task("seer"),
                           dataset="nq-sample", llm="smollm2-135m", manifest={
                               "model_id": "HuggingFaceTB/SmolLM2-135M-Instruct",
                               "model_revision": "main", "source_dataset": "nq-sample",
                               "source_revision": "main", "license": "cc-by-sa-3.0",
                               "prompt_templates": {}, "sampling": {}, "seed": 0})
    taken = tmp_path / "taken"
    (taken / "model").mkdir(parents=True)
    cases = [
        (tmp_path / "absent", tmp_path / "m1", "no such artifact version folder"),
        (UTILITY, tmp_path / "m2", "a utility artifact has no preference pairs"),
        (empty, tmp_path / "m3", "the artifact has no preference pairs"),
        (taken, tmp_path / "m4", "no manifest.json here"),
        (empty, taken, "already exists"),  # checked before the pairs
    ]
    for artifact, out, message in cases:
        code, err = _main(monkeypatch, capsys, artifact, "--out", out)
        assert code == 1 and err.count("error:") == 1 and message in err, err
        assert not out.exists() or out == taken
    assert [p.name for p in taken.iterdir()] == ["model"]


def _main(monkeypatch, capsys, *args) -> tuple[int, str]:
    """(exit code, stderr) of `labeler train-extractor ARGS` run by main()."""
    monkeypatch.setattr(sys, "argv", ["labeler", "train-extractor", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, capsys.readouterr().err


def _training_code(card: str) -> str:
    """The card's one python block that calls train_extractor."""
    [code] = [block for block in re.findall(r"```python\n(.*?)```", card, flags=re.DOTALL)
              if "train_extractor(" in block]
    return code
