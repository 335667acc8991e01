"""Verdicts kept as they are made, written as `review` versions, merged by reviewer id."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from labeler.artifacts import load_artifact
from labeler.artifacts.manifest import read_manifest
from labeler.cli import cli
from labeler.errors import ArtifactError, InputError
from labeler.view.verdicts import Verdicts, merge_reviews


def _verdicts(labels, reviewer="ann"):
    return Verdicts(labels, read_manifest(labels), out=labels.parents[3], reviewer=reviewer)


def test_a_verdict_is_on_disk_before_add_returns_and_survives_a_killed_server(labels):
    qid = load_artifact(labels).records[0]["qid"]
    _verdicts(labels).add(qid=qid, pid=None, verdict="disagree", note="known, not unknown")

    again = _verdicts(labels)  # a new server: the first was never stopped

    assert [(v["qid"], v["verdict"], v["note"]) for v in again.of(qid)] == [
        (qid, "disagree", "known, not unknown")]


def test_seal_writes_a_valid_review_version_naming_the_labels(labels):
    records = load_artifact(labels).records
    verdicts = _verdicts(labels)
    verdicts.add(qid=records[0]["qid"], pid=None, verdict="agree")
    pid = records[1]["candidates"][0]["pid"]
    verdicts.add(qid=records[1]["qid"], pid=pid, verdict="unsure")
    verdicts.add(qid=records[1]["qid"], pid=pid, verdict="disagree", note="changed my mind")

    folder = verdicts.seal()

    assert folder == labels.parents[3] / "review" / "nq-sample" / "smollm2-135m" / "v1"
    assert not verdicts.journal.exists()
    manifest = read_manifest(folder)
    assert manifest["labels"]["version"] == "1"
    assert len(manifest["labels"]["manifest_sha256"]) == 64
    assert [r["verdict"] for r in load_artifact(folder).records] == ["agree", "disagree"]
    assert manifest["stats"]["agreement"] == 0.5
    result = CliRunner().invoke(cli, ["validate", str(folder)])
    assert result.exit_code == 0, result.output
    assert verdicts.seal() is None  # nothing new: no empty version

    later = _verdicts(labels)  # the next session starts from v1
    assert len(later.of(records[1]["qid"])) == 1


def test_two_reviewers_merge_by_reviewer_id(labels, tmp_path):
    qid = load_artifact(labels).records[0]["qid"]
    ann = _verdicts(labels, "ann")
    ann.add(qid=qid, pid=None, verdict="agree")
    first = ann.seal()
    bob = Verdicts(labels, read_manifest(labels), out=tmp_path / "bob", reviewer="bob")
    bob.add(qid=qid, pid=None, verdict="disagree")
    second = bob.seal()

    merged = merge_reviews([first, second], out=tmp_path / "merged")
    result = CliRunner().invoke(cli, ["merge-reviews", str(first), str(second),
                                      "--out", str(tmp_path / "cli"), "--json"])
    assert result.exit_code == 0, result.output
    assert load_artifact(json.loads(result.stdout)["path"]).records == load_artifact(
        merged).records

    assert {(r["reviewer"], r["verdict"]) for r in load_artifact(merged).records} == {
        ("ann", "agree"), ("bob", "disagree")}
    assert read_manifest(merged)["stats"]["reviewers"] == ["ann", "bob"]


def test_a_bad_verdict_or_reviewer_is_refused_and_nothing_is_kept(labels):
    verdicts = _verdicts(labels)
    with pytest.raises(InputError, match="verdict"):
        verdicts.add(qid="q", pid=None, verdict="maybe")
    assert not verdicts.journal.exists()
    with pytest.raises(InputError, match="reviewer"):
        _verdicts(labels, "ann/../x")


def test_a_journal_line_cut_by_a_kill_is_left_out(labels):
    verdicts = _verdicts(labels)
    record = verdicts.add(qid="q1", pid=None, verdict="agree")
    with verdicts.journal.open("a") as f:
        f.write(json.dumps(record)[:20])

    assert len(_verdicts(labels).of("q1")) == 1


def test_score_reports_each_reviewers_agreement_and_refuses_other_labels(labels, tmp_path):
    records = load_artifact(labels).records
    ann = _verdicts(labels, "ann")
    ann.add(qid=records[0]["qid"], pid=None, verdict="agree")
    ann.add(qid=records[1]["qid"], pid=None, verdict="disagree")
    ann.add(qid=records[2]["qid"], pid=None, verdict="unsure")
    review = ann.seal()

    result = CliRunner().invoke(cli, ["score", str(review), "--against", str(labels), "--json"])

    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows[0] == {"reviewer": "ann", "verdicts": 3, "agree": 1, "disagree": 1,
                       "unsure": 1, "agreement": 0.5}
    assert rows[-1]["reviewer"] == "all"
    refused = CliRunner().invoke(cli, ["score", str(review), "--against", str(review)])
    assert isinstance(refused.exception, ArtifactError)
    assert "these verdicts are on utility v1 of nq-sample × smollm2-135m" in str(
        refused.exception)
