"""The global flags through the real entry point: `--debug` tracebacks, `--quiet` silence.

Errors are driven through `labeler.cli.main` (the console script), not CliRunner, because
turning a `LabelerError` into one line, or a traceback, is main()'s job.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import cli, main

FIXTURES = Path(__file__).parent.parent / "fixtures"
UNKNOWN = ("error: unknown corpus 'nope'. Available: kilt-w100, wiki-dpr, msmarco-passage, "
           "kilt-wikipedia, FILE (name one of the corpora or pass a FlashRAG corpus file)")
DATASETS = ("nq-sample, nq, tq, msmarco-fqa, hotpotqa, fever, 2wiki, nq-tevatron, "
            "tq-tevatron-distant, hotpotqa-distractor, nq-open-train, nq-open-test, tq-train, "
            "tq-test, hotpotqa-train, cisi-sample, wands, esci, jsonl:PATH, search:PATH")


def _main(monkeypatch, capsys, *args) -> tuple[int, str]:
    """(exit code, stderr) of `labeler ARGS` run by main() in this process."""
    monkeypatch.setattr(sys, "argv", ["labeler", *map(str, args)])
    with pytest.raises(SystemExit) as exit_:
        main()
    return exit_.value.code, capsys.readouterr().err


def test_a_labeler_error_is_one_line_without_debug(monkeypatch, capsys, tmp_path):
    code, err = _main(monkeypatch, capsys, "retrieve", "--dataset", "nq-sample",
                      "--corpus", "nope", "--out", tmp_path / "run.trec")
    assert (code, err) == (1, UNKNOWN + "\n")


@pytest.mark.parametrize("how", ["--debug", "LABELER_DEBUG=1"])
def test_debug_prints_the_traceback_then_the_line(how, monkeypatch, capsys, tmp_path):
    flags = [how] if how == "--debug" else []
    if how != "--debug":
        monkeypatch.setenv("LABELER_DEBUG", "1")
    code, err = _main(monkeypatch, capsys, *flags, "retrieve", "--dataset", "nq-sample",
                      "--corpus", "nope", "--out", tmp_path / "run.trec")
    assert code == 1
    assert err.startswith("Traceback (most recent call last):\n")
    assert 'labeler/sources/registry.py", line' in err  # where it was raised
    assert "labeler.errors.UnknownNameError: unknown corpus 'nope'." in err
    assert err.endswith("\n" + UNKNOWN + "\n")


def test_an_unexpected_exception_is_never_turned_into_a_line(monkeypatch, capsys, tmp_path):
    from labeler.workflows import retrieve

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(retrieve, "load_source", broken)
    for flags in ([], ["--debug"]):
        monkeypatch.setattr(sys, "argv", ["labeler", *flags, "retrieve", "--dataset", "nq-sample",
                                          "--out", str(tmp_path / "run.trec")])
        with pytest.raises(RuntimeError, match="a bug"):  # Python prints it and exits 1
            main()


def test_python_m_labeler_debug_prints_the_traceback(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "labeler", "--debug", "retrieve", "--dataset", "nq-sample",
         "--corpus", "nope", "--out", str(tmp_path / "run.trec")],
        check=False, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("Traceback (most recent call last):\n")
    assert done.stderr.endswith("\n" + UNKNOWN + "\n")


def test_quiet_silences_progress_hints_but_not_warnings(tmp_path, smollm):
    """Without --encoder, retrieve tries BGE-M3 (not cached, offline) and warns on stderr that
    it falls back to the bundled MiniLM: --quiet keeps that warning. A build's status lines
    (one per kind of LLM call) are hints: --quiet drops them and nothing else."""
    retrieve = ["retrieve", "--dataset", f"jsonl:{FIXTURES / 'flashrag_nq_test.jsonl'}",
                "--corpus", str(FIXTURES / "flashrag_corpus.jsonl"), "--limit", "2", "--k", "2",
                "--out", str(tmp_path / "run.trec")]
    build = ["build", "--dataset", "nq-sample", "--llm", "smollm2-135m", "--limit", "1",
             "--pool", "hgp", "--max-new-tokens", "4"]
    # loud first: --quiet sets LABELER_QUIET in this process for the rest of the test
    loud = CliRunner().invoke(cli, retrieve)
    assert loud.exit_code == 0, loud.output
    warning = " ".join(loud.stderr.split())  # rich wraps at 80 columns
    assert warning.startswith("warning: the default encoder bge-m3 cannot load")
    assert "retrieving with the bundled minilm (sentence-transformers/all-MiniLM-L6-v2)" in warning
    loud_build = CliRunner().invoke(cli, [*build, "--out", str(tmp_path / "loud")])
    assert loud_build.exit_code == 0, loud_build.output
    assert ("closed-book answers + one-passage answers + all-passage answers + human-gold "
            "answers: 2 requests") in (
        " ".join(loud_build.stderr.split()))

    quiet = CliRunner().invoke(cli, ["--quiet", *retrieve])
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stderr == loud.stderr
    assert quiet.stdout.endswith(f"run written to {tmp_path / 'run.trec'}\n")
    quiet_build = CliRunner().invoke(cli, ["--quiet", *build, "--out", str(tmp_path / "quiet")])
    assert quiet_build.exit_code == 0, quiet_build.output
    assert quiet_build.stderr == ""


@pytest.mark.parametrize(("args", "line"), [
    (["judge", "--method", "bogus"],
     ("error: invalid value for '--method': 'bogus' is not one of 'pvs', 'lvs', 'lvr', "
     "'likelihood', 'retrieval', 'attention'. (see 'labeler judge --help')")),
    (["judge", "--method", "lvs", "--k", "0"],
     "error: invalid value for '--k': 0 is not in the range x>=1. (see 'labeler judge --help')"),
    (["compare", "/nonexistent"],
     ("error: invalid value for 'ARTIFACTS...': Directory '/nonexistent' does not exist. "
     "(see 'labeler compare --help')")),
    (["cache", "stats", "--bogus"],
     "error: no such option '--bogus'. (see 'labeler cache stats --help')"),
    (["build", "--dataset", "hotpot", "--llm", "smollm2-135m"],
     (f"error: invalid value for '--dataset': unknown dataset 'hotpot'. Did you mean 'hotpotqa'? "
      f"Available: {DATASETS} (see 'labeler build --help')")),
    (["reproduce", "utility-paper", "--dataset", "nq-smaple"],
     (f"error: invalid value for '--dataset': unknown dataset 'nq-smaple'. Did you mean "
      f"'nq-sample'? Available: {DATASETS} (see 'labeler reproduce utility-paper --help')")),
    (["train"],
     "error: no such command 'train'. Did you mean 'train-extractor'? (see 'labeler --help')"),
    (["biuld", "--dataset", "nq"],
     "error: no such command 'biuld'. Did you mean 'build'? (see 'labeler --help')"),
    (["frobnicate"], "error: no such command 'frobnicate'. (see 'labeler --help')"),
])
def test_a_usage_error_is_one_line_naming_the_option_and_exits_2(args, line, monkeypatch,
                                                                  capsys):
    code, err = _main(monkeypatch, capsys, *args)
    assert (code, err) == (2, line + "\n")
