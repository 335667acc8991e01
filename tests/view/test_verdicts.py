"""Verdicts kept as they are made, written as `review` versions, merged by reviewer id."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from labeler.artifacts import load_artifact, write_artifact
from labeler.artifacts.manifest import read_manifest
from labeler.cli import cli
from labeler.errors import ArtifactError, InputError
from labeler.view.review import ReviewKind
from labeler.view.verdicts import Verdicts, labels_of, merge_reviews


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


def test_score_reports_agreement_per_reviewer_per_thing_and_between_reviewers(labels,
                                                                             tmp_path):
    records = load_artifact(labels).records
    qids = [r["qid"] for r in records]
    pid = records[0]["candidates"][0]["pid"]
    ann, bob = _verdicts(labels, "ann"), _verdicts(labels, "bob")
    for qid, verdict in zip(qids, ("agree", "disagree", "unsure"), strict=True):
        ann.add(qid=qid, pid=None, verdict=verdict)
    ann.add(qid=qids[0], pid=pid, verdict="agree")
    ann.seal()
    for qid, verdict in zip(qids, ("agree", "agree", "unsure"), strict=True):
        bob.add(qid=qid, pid=None, verdict=verdict)
    review = bob.seal()  # on top of ann's: both reviewers

    result = CliRunner().invoke(cli, ["score", str(review), "--against", str(labels), "--json"])

    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["reviewers"][0] == {"reviewer": "ann", "verdicts": 4, "agree": 2,
                                     "disagree": 1, "unsure": 1, "agreement": 2 / 3}
    assert [r["reviewer"] for r in found["reviewers"]] == ["ann", "bob", "all"]
    assert [(r["about"], r["verdicts"]) for r in found["about"]] == [("query", 6),
                                                                   ("candidate", 1)]
    # over the three queries both judged: alike on 2; p_e = (1·2 + 1·0 + 1·1) / 9 = 1/3
    assert found["between"] == [{"reviewers": "ann × bob", "items": 3, "same": 2 / 3,
                                 "kappa": pytest.approx((2 / 3 - 1 / 3) / (1 - 1 / 3))}]
    table = CliRunner().invoke(cli, ["score", str(review), "--against", str(labels)])
    assert "Cohen's kappa" in table.output and "0.500" in table.output
    refused = CliRunner().invoke(cli, ["score", str(review), "--against", str(review)])
    assert isinstance(refused.exception, ArtifactError)
    assert "these verdicts are on utility v1 of nq-sample × smollm2-135m" in str(
        refused.exception)


def test_two_sessions_of_one_reviewer_share_the_journal_and_seal_all_of_it(labels):
    records = load_artifact(labels).records
    first, second = _verdicts(labels), _verdicts(labels)  # two servers, one reviewer
    first.add(qid=records[0]["qid"], pid=None, verdict="agree")
    second.add(qid=records[1]["qid"], pid=None, verdict="disagree")

    folder = first.seal()  # from disk: the other session's verdict too
    second.add(qid=records[2]["qid"], pid=None, verdict="unsure")
    later = second.seal()  # on top of the first's version

    assert len(load_artifact(folder).records) == 2
    assert [r["verdict"] for r in load_artifact(later).records] == [
        "agree", "disagree", "unsure"]
    assert not first.journal.exists()


#: a note as long as the viewer before schema 2 took (it had no cap)
LONG_NOTE = "the gold passage answers it, " * 300


def _schema1_review(labels):
    """A review version as `labeler view` wrote it before verdicts named what they judge
    (schema 1: no `about`; ann's verdict on a query and on a candidate)."""
    record = load_artifact(labels).records[0]
    old = [{"reviewer": "ann", "llm": "smollm2-135m", "qid": record["qid"], "pid": pid,
            "verdict": verdict, "note": note, "at": "2026-12-01T10:00:00.000Z"}
           for pid, verdict, note in ((None, "agree", LONG_NOTE),  # it took any note
                                      (record["candidates"][0]["pid"], "disagree", ""))]
    given = {key: read_manifest(labels)[key] for key in (
        "model_id", "model_revision", "source_dataset", "source_revision", "license")}
    folder = write_artifact(old, out=labels.parents[3], kind=ReviewKind, dataset="nq-sample",
                            llm="smollm2-135m", manifest={
                                **given, "prompt_templates": {}, "sampling": {}, "seed": None,
                                "labels": labels_of(labels, read_manifest(labels))})
    manifest = read_manifest(folder)
    manifest["schema_version"] = 1
    del manifest["stats"]["about"]
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder, record


def test_a_schema1_review_still_validates_scores_merges_and_carries_forward(labels, tmp_path):
    old, record = _schema1_review(labels)
    assert CliRunner().invoke(cli, ["validate", str(old)]).exit_code == 0

    scored = CliRunner().invoke(cli, ["score", str(old), "--against", str(labels), "--json"])
    assert scored.exit_code == 0, scored.output
    assert [(r["about"], r["verdicts"]) for r in json.loads(scored.stdout)["about"]] == [
        ("query", 1), ("candidate", 1)]
    merged = merge_reviews([old], out=tmp_path / "merged")
    assert {r["about"] for r in load_artifact(merged).records} == {"query", "candidate"}

    bob = _verdicts(labels, "bob")  # a new session on those labels opens, and seals on top
    old_line = {"reviewer": "bob", "llm": "smollm2-135m", "qid": record["qid"],  # a schema-1
                "pid": record["candidates"][0]["pid"], "verdict": "agree", "note": "",  # journal
                "at": "2026-12-01T11:00:00.000Z"}
    bob.journal.write_text(json.dumps(old_line) + "\n", encoding="utf-8")
    bob.add(qid=record["qid"], pid=None, verdict="unsure")
    new = bob.seal()
    assert [(r["reviewer"], r["about"]) for r in load_artifact(new).records] == [
        ("ann", "candidate"), ("ann", "query"), ("bob", "candidate"), ("bob", "query")]
    assert CliRunner().invoke(cli, ["validate", str(new)]).exit_code == 0
    assert load_artifact(new).records[1]["note"] == LONG_NOTE  # kept whole
