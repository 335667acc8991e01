"""Server messages in `push` and `pull` errors: one line, every token in them redacted, even when
the server echoes the request's Authorization header (tests/support/hub_server.py's "echo"
fault)."""

from __future__ import annotations

import sys

import pytest

from labeler.cli import main
from labeler.hub import push

ECHOED = "the Hub refused: HTTP 400 (bad request with Authorization: Bearer *** see the logs)"
AGAIN = "(run the same command again: a push resumes where it stopped)"


def _main(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `labeler ARGS` run by main(), the console script."""
    monkeypatch.setattr(sys, "argv", ["labeler", *map(str, args)])
    with pytest.raises(SystemExit) as exit_:
        main()
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def test_push_prints_the_echoed_header_redacted_on_one_line(hub, write, monkeypatch, capsys,
                                                            token):
    v1 = write()
    hub.inject(at=1, kind="echo", times=None)  # every request answered 400, header echoed
    code, out, err = _main(monkeypatch, capsys, "push", v1, "--repo", "lab/echo")
    assert (code, err) == (1, f"error: lab/echo: {ECHOED} {AGAIN}\n")
    assert token not in out + err
    hub.clear_faults()
    assert ("dataset", "lab/echo") not in hub.repos  # nothing was created


def test_pull_prints_the_echoed_header_redacted_on_one_line(hub, write, tmp_path, monkeypatch,
                                                            capsys, token):
    push([write()], repo="lab/echo")
    capsys.readouterr()  # the push's own lines
    hub.inject(at=1, kind="echo", times=None)
    pulled = tmp_path / "pulled"
    code, out, err = _main(monkeypatch, capsys, "pull", "lab/echo", "--out", pulled)
    assert (code, err) == (1, f"error: lab/echo: {ECHOED} (run the same command again)\n")
    assert token not in out + err
    assert not pulled.exists() or not any(pulled.rglob("*"))  # nothing half-downloaded
