"""No verdict a `labeler view` page heard "saved" is lost: two real `labeler view` processes on
the same labels (one reviewer twice, or two reviewers sharing --out) take verdicts in turn, are
stopped with SIGTERM and SIGKILL in both orders, and every saved verdict is in the latest
review version once the last session has sealed (a killed one's journal is sealed by the next
session, here `Verdicts(...).seal()` as that session's stop runs it)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request

import pytest

from labeler.artifacts import load_artifact
from labeler.artifacts.manifest import read_manifest
from labeler.view.verdicts import Verdicts, labels_of, latest_review


class Session:
    """One `labeler view` process; the verdicts its server answered "saved" go to `log`, in
    the order they were saved."""

    def __init__(self, labels, out, reviewer, log: list):
        self.reviewer, self.log = reviewer, log
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from labeler.cli import main; main()", "view", str(labels),
             "--reviewer", reviewer, "--out", str(out), "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.address, self.token = json.loads(self.process.stdout.readline())["url"].split(
            "/?token=")

    def judge(self, qid: str, pid: str | None, verdict: str) -> None:
        about = "query" if pid is None else "candidate"
        request = urllib.request.Request(
            f"{self.address}/api/views/0/verdict", method="POST",
            headers={"Content-Type": "application/json", "X-Labeler-Token": self.token},
            data=json.dumps({"version": 0, "qid": qid, "about": about, "pid": pid,
                             "verdict": verdict}).encode())
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
        self.log.append(((self.reviewer, qid, about, pid), verdict))

    def stop(self, how: signal.Signals) -> None:
        self.process.send_signal(how)
        _, stderr = self.process.communicate(timeout=60)
        assert self.process.returncode == (0 if how == signal.SIGTERM else -9), stderr


def _items(labels) -> list[tuple[str, str | None]]:
    """Every (qid, pid) a verdict can judge: each query, then each of its candidates."""
    return [(r["qid"], pid) for r in load_artifact(labels).records
            for pid in [None, *(c["pid"] for c in r["candidates"][:3])]]


def _sealed(labels, out) -> dict[tuple, str]:
    """The latest review version's verdicts of these labels: key -> verdict."""
    about = labels_of(labels, read_manifest(labels))
    folder = latest_review(out / "review" / "nq-sample" / "smollm2-135m", about)
    return {(r["reviewer"], r["qid"], r["about"], r["pid"]): r["verdict"]
            for r in load_artifact(folder).records}


def _run(labels, out, reviewers: tuple[str, str], order: tuple) -> None:
    log: list = []
    first, second = (Session(labels, out, name, log) for name in reviewers)
    items = _items(labels)
    for n, (qid, pid) in enumerate(items):  # in turn, some items judged by both
        first.judge(qid, pid, "agree")
        second.judge(*items[-1 - n], "disagree" if n % 2 else "unsure")
    first.stop(order[0])
    second.judge(*items[0], "disagree")  # after the first one stopped
    second.stop(order[1])
    for reviewer in set(reviewers):  # the next session of each: seals what a kill left
        Verdicts(labels, read_manifest(labels), out=out, reviewer=reviewer).seal()

    assert _sealed(labels, out) == dict(log)  # each key's latest saved verdict
    assert not list((out / "review").rglob(".journal-*"))


ORDERS = [(signal.SIGTERM, signal.SIGKILL), (signal.SIGKILL, signal.SIGTERM)]


@pytest.mark.parametrize("order", ORDERS, ids=["term-then-kill", "kill-then-term"])
def test_two_sessions_of_one_reviewer_lose_no_saved_verdict(labels, tmp_path, order):
    _run(labels, tmp_path / "reviews", ("ann", "ann"), order)


@pytest.mark.parametrize("order", ORDERS, ids=["term-then-kill", "kill-then-term"])
def test_two_reviewers_sharing_out_both_end_in_the_latest_version(labels, tmp_path, order):
    _run(labels, tmp_path / "reviews", ("ann", "bob"), order)
