"""`labeler view` as a user runs it: a process that prints its address (with its token) and
opens it (--open), keeps a verdict, and on SIGTERM writes it as the next review version, which
`labeler validate` accepts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request

from click.testing import CliRunner

from labeler.artifacts import load_artifact
from labeler.cli import cli
from labeler.errors import ArtifactError, InputError


def test_serve_keep_a_verdict_stop_and_the_review_version_is_written(labels, tmp_path):
    qid = load_artifact(labels).records[0]["qid"]
    opened = tmp_path / "opened.txt"  # --open: the "browser" (webbrowser runs $BROWSER) says what
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])")
    process = subprocess.Popen(
        [sys.executable, "-c", "from labeler.cli import main; main()", "view", str(labels),
         "--reviewer", "ann", "--out", str(tmp_path / "reviews"), "--json", "--open"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "BROWSER": f"{sys.executable} {browser} %s"})
    try:
        url = json.loads(process.stdout.readline())["url"]
        address, token = url.split("/?token=")
        assert address.startswith("http://127.0.0.1:") and len(token) >= 40
        request = urllib.request.Request(
            f"{address}/api/views/0/verdict", method="POST",
            headers={"Content-Type": "application/json", "X-Labeler-Token": token},
            data=json.dumps({"version": 0, "qid": qid, "about": "query", "pid": None,
                             "verdict": "disagree", "note": "known"}).encode())
        with urllib.request.urlopen(request) as response:
            assert json.loads(response.read())["verdict"] == "disagree"
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)

    assert opened.read_text() == url  # the page opened with its token
    review = tmp_path / "reviews" / "review" / "nq-sample" / "smollm2-135m" / "v1"
    assert process.returncode == 0, stderr
    assert stdout == ""  # --json: the address was the one document
    assert f"verdicts written: {review}" in stderr
    assert [(r["qid"], r["verdict"]) for r in load_artifact(review).records] == [
        (qid, "disagree")]
    result = CliRunner().invoke(cli, ["validate", str(review)])
    assert result.exit_code == 0, result.output


def test_no_version_a_version_out_of_its_layout_and_a_taken_port_are_one_line_each(labels, tmp_path):
    result = CliRunner().invoke(cli, ["view", str(labels.parents[3])])  # the out folder
    assert isinstance(result.exception, ArtifactError), result.exception
    assert "no manifest.json here" in result.exception.line()

    moved = tmp_path / "downloads" / "v1"  # a copy outside <out>/<artifact>/<dataset>/<llm>/
    shutil.copytree(labels, moved)
    result = CliRunner().invoke(cli, ["view", str(moved)])
    assert isinstance(result.exception, InputError), result.exception
    assert "pass --out" in result.exception.line()
    assert not (tmp_path / "review").exists()

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = CliRunner().invoke(cli, ["view", str(labels), "--port",
                                          str(taken.getsockname()[1]), "--out", str(tmp_path)])
    assert isinstance(result.exception, InputError), result.exception
    assert "pass another --port" in result.exception.line()
