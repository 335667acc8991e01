"""What a submission holds reaches the terminal escaped (issue 49): an escape sequence in a
file's name or a bad line set the terminal's title, and a NUL in a rejected pid hid the part of
it that made it wrong."""

from __future__ import annotations

import json

from support.console import run_main as _main

from labeler.terminal import escape

TITLE = "\x1b]0;owned\x07"  # sets an xterm's title


def test_escape_shows_control_characters_and_keeps_the_rest():
    assert escape(f"a{TITLE}b\x00c\nd\u202ee é") == r"a\x1b]0;owned\x07b\x00c\nd\u202ee é"


def test_a_rejected_pid_with_a_nul_is_shown_whole(write, records, tmp_path, monkeypatch,
                                                  capsys):
    version = write()
    record = records[0]
    pid = record["candidates"][0]["pid"]
    sub = tmp_path / "sub.jsonl"
    sub.write_text(json.dumps({"qid": record["qid"], "selected": [pid + "\x00-forged"]}) + "\n")

    code, _, err = _main(monkeypatch, capsys, "score", sub, "--against", version)

    assert code == 1 and "\x00" not in err
    assert f"pid '{pid}\\x00-forged' is not one of query" in err


def test_an_escape_sequence_in_a_submission_name_is_printed_escaped(write, records, tmp_path,
                                                                    monkeypatch, capsys):
    version = write()
    sub = tmp_path / f"sub{TITLE}[red]x.jsonl"  # and rich's markup, shown as written
    lines = [json.dumps({"qid": r["qid"], "selected": [r["candidates"][0]["pid"]]})
             for r in records]
    bad = json.dumps({"qid": records[0]["qid"], "selected": 3})  # skipped with --lenient
    sub.write_text("\n".join([*lines, bad]) + "\n")

    code, out, err = _main(monkeypatch, capsys, "score", sub, "--against", version, "--lenient")

    assert code == 0, err
    assert "\x1b" not in out + err and "\x07" not in out + err
    shown = r"sub\x1b]0;owned\x07[red]x.jsonl"
    assert shown in "".join(out.split()) and shown in err  # the table's title, the skip line


def test_validate_shows_a_file_name_with_an_escape_sequence_escaped(tmp_path, monkeypatch,
                                                                     capsys):
    bad = tmp_path / f"labels{TITLE}[red]x.jsonl"
    bad.write_text("{}\n")

    code, out, err = _main(monkeypatch, capsys, "validate", bad, "--schema", "utility")

    assert code == 1
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert r"labels\x1b]0;owned\x07[red]x.jsonl" in "".join(out.split())  # the table's title


def test_a_closing_line_naming_a_users_folder_is_escaped(tmp_path, monkeypatch, capsys):
    from labeler.cli.output import emit

    emit({}, (), [f"wrote {tmp_path}/out{TITLE}\nsecond line"], as_json=False)

    out = capsys.readouterr().out
    assert "\x1b" not in out and r"out\x1b]0;owned\x07" in out and "\nsecond line" in out


def test_a_usage_error_quoting_a_value_shows_its_escape_sequence_escaped(tmp_path):
    import click

    from labeler.cli import usage_line

    error = click.BadParameter(f"{tmp_path}/a{TITLE}b is not a folder", param_hint="'--out'")

    assert usage_line(error).endswith(r"a\x1b]0;owned\x07b is not a folder")
