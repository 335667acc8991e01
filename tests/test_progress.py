"""Progress where stderr is not a terminal (a batch job's log): plain lines every few seconds,
nothing for a loop shorter than that, nothing with --quiet."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from labeler.progress import info, progress_bar, track


def test_a_log_gets_a_plain_line_every_interval_and_a_last_one(monkeypatch, capsys):
    monkeypatch.setenv("LABELER_PROGRESS_SECONDS", "0")  # every step is past the interval
    assert list(track(range(3), "encoding corpus")) == [0, 1, 2]
    lines = capsys.readouterr().err.splitlines()
    assert [re.sub(r"\d+s", "Ns", line) for line in lines] == [
        "encoding corpus: 1/3 (33%), Ns elapsed, eta Ns",
        "encoding corpus: 2/3 (67%), Ns elapsed, eta Ns",
        "encoding corpus: 3/3 (100%), Ns elapsed",  # once, though the loop ends here
    ]
    with progress_bar("reading", None) as advance:  # no total known in advance
        advance(5)
        advance(2)
    assert [line.split(",")[0] for line in capsys.readouterr().err.splitlines()] == [
        "reading: 5", "reading: 7"]


def test_a_short_loop_or_quiet_writes_nothing(monkeypatch, capsys):
    monkeypatch.setenv("LABELER_PROGRESS_SECONDS", "10")
    assert list(track(range(3), "encoding corpus")) == [0, 1, 2]
    monkeypatch.setenv("LABELER_PROGRESS_SECONDS", "0")
    monkeypatch.setenv("LABELER_QUIET", "1")
    assert list(track(range(3), "encoding corpus")) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_a_hint_is_one_line_however_long_where_stderr_is_not_a_terminal(monkeypatch, capsys):
    monkeypatch.delenv("COLUMNS", raising=False)  # a console off a terminal is 80 wide
    hint = ("kilt-w100: the first use downloads KILT's pages (34.76 GiB) once and cuts them "
            "into 100-word passages; later runs read the stored corpus")
    info(hint)
    assert capsys.readouterr().err.splitlines() == [hint]


def test_a_build_with_stderr_to_a_file_says_where_it_is(tmp_path):
    """The bundled model answering one query, stderr to a file, as a batch job runs it."""
    log = tmp_path / "build.log"
    with log.open("w") as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "labeler", "build", "--dataset", "nq-sample", "--llm",
             "smollm2-135m", "--limit", "1", "--pool", "hgp", "--max-new-tokens", "4",
             "--out", str(tmp_path / "out")], cwd=tmp_path, stdout=subprocess.PIPE,
            stderr=stderr, text=True, timeout=600, check=False,
            env={**os.environ, "LABELER_PROGRESS_SECONDS": "0"})
    text = log.read_text()
    assert done.returncode == 0, text
    assert re.search(r"^generate smollm2-135m: 2/2 \(100%\), \d+s elapsed$", text, re.MULTILINE), text
    # each step once: the call cache's bar, not the backend's batches inside it again
    steps = [re.sub(r" \((\d+ )?cached\)|, \d+s elapsed.*", "", line)
             for line in text.splitlines() if line.startswith("generate ")]
    assert len(steps) == len(set(steps)), text
    # no other library's tqdm bar (this fresh cache converts the GGUF model: transformers')
    assert "converting SmolLM2" in " ".join(text.split()), text
    # the conversion's minutes of dequantizing, tensor by tensor, as labeler's own lines
    assert re.search(r"^dequantizing SmolLM2-135M-Instruct\.Q4_1\.gguf: 272/272 \(100%\), "
                     r"\d+s elapsed$", text, re.MULTILINE), text
    assert "it/s" not in text and "%|" not in text, text
    assert re.search(r"^utility shards for smollm2-135m: 1/1 \(100%\), \d+s elapsed$", text,
                     re.MULTILINE), text


def test_the_call_caches_bar_counts_what_it_computes_and_covers_the_backends(monkeypatch,
                                                                            capsys):
    """The call cache's bar counts its misses, says how many were cached, and the backend's
    bars inside it (the same calls, batch by batch) draw nothing: one line set per step."""
    monkeypatch.setenv("LABELER_PROGRESS_SECONDS", "0")
    with progress_bar("generate smollm2-135m (3 cached)", 2, covers_inner=True) as advance:
        for _ in range(2):
            with progress_bar("generate smollm2-135m", 1) as inner:  # one backend batch
                inner(1)
            advance(1)
    with progress_bar("encoding corpus", 1) as advance:  # after it: drawn again
        advance(1)
    lines = [re.sub(r"\d+s", "Ns", line) for line in capsys.readouterr().err.splitlines()]
    assert lines == ["generate smollm2-135m (3 cached): 1/2 (50%), Ns elapsed, eta Ns",
                     "generate smollm2-135m (3 cached): 2/2 (100%), Ns elapsed",
                     "encoding corpus: 1/1 (100%), Ns elapsed"]


def test_a_hint_or_warning_naming_a_users_path_shows_its_escape_sequence_escaped(capsys):
    from labeler.progress import info, warning

    info("storing the corpus in /data/cache\x1b]0;owned\x07")
    warning("the call cache /data/cache\x1b[2J is damaged")

    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert r"/data/cache\x1b]0;owned\x07" in err and r"/data/cache\x1b[2J is damaged" in err
