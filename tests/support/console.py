"""`labeler` run as its console script runs it (main(): one error line, its exit code), in
this process, for a test that reads what a person would see."""

from __future__ import annotations

import sys

from labeler.cli import main


def run_main(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `labeler ARGS` run by main() in this process."""
    monkeypatch.setattr(sys, "argv", ["labeler", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err
