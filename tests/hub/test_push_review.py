"""A `review` version (verdicts made in `labeler view`) pushes, pulls byte-identical and
validates like any artifact, and `score` reports on it: utility verdicts made in Python, and
verdicts on a rubric candidate and on SEER extractions made through the viewer's server."""

from __future__ import annotations

import http.client
import json
import threading

from click.testing import CliRunner
from support.rubric2 import scripted_rubric

from labeler.artifacts import load_artifact
from labeler.artifacts.manifest import read_manifest
from labeler.cli import cli
from labeler.hub import pull, push
from labeler.metrics.kappa import cohen_kappa
from labeler.view import make_server, open_viewing
from labeler.view.verdicts import Verdicts


def test_a_review_version_pushes_pulls_identical_and_validates(hub, write, tmp_path):
    labels = write()
    verdicts = Verdicts(labels, read_manifest(labels), out=tmp_path / "out", reviewer="ann")
    for record, verdict in zip(load_artifact(labels).records, ("agree", "disagree"), strict=False):
        verdicts.add(qid=record["qid"], pid=None, verdict=verdict, note="looked at it")
    review = verdicts.seal()

    push([review], repo="lab/reviews")
    pulled = pull("lab/reviews", config="review.nq-sample.smollm2-135m", out=tmp_path / "pulled")

    assert {p.name: p.read_bytes() for p in pulled.iterdir()} == {
        p.name: p.read_bytes() for p in review.iterdir()}
    result = CliRunner().invoke(cli, ["validate", str(pulled)])
    assert result.exit_code == 0, result.output


def _judge(server, view: int, **request) -> tuple[int, dict]:
    """POST a verdict as the page does: (status, answer)."""
    connection = http.client.HTTPConnection(*server.server_address, timeout=30)
    connection.request("POST", f"/api/views/{view}/verdict", body=json.dumps(
        {"version": 0, "note": ""} | request), headers={
        "Host": f"127.0.0.1:{server.port}", "Content-Type": "application/json",
        "X-Labeler-Token": server.token})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def _review(folders, reviewer: str, out, verdicts) -> list:
    """Serve `folders` for `reviewer`, make `verdicts` ((view, request) pairs) through the
    server, stop: the review versions sealed."""
    viewing = open_viewing(folders, reviewer=reviewer, out=out)
    server = make_server(viewing)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        for view, request in verdicts:
            status, answer = _judge(server, view, **request)
            assert status == 200, answer
    finally:
        server.shutdown()
        server.server_close()
    return viewing.seal()


def test_verdicts_on_a_rubric_candidate_and_a_seer_extraction_round_trip(hub, seer2_build,
                                                                          tmp_path):
    """Made through the viewer's server by two reviewers, sealed, validated, pushed, pulled
    byte-identical and scored: per reviewer, per thing judged, and Cohen's kappa."""
    rubric = scripted_rubric(tmp_path / "out")
    doc = json.loads((rubric / "candidates-00000.jsonl").read_text().splitlines()[0])
    seer = load_artifact(seer2_build).records[0]
    samples = [str(e["sample"]) for e in seer["extractions"]]
    out = tmp_path / "reviews"
    # view 0: the rubric version, view 1: the seer one (open_viewing keeps the order given)
    folders = [rubric, seer2_build]
    bogus = open_viewing(folders, reviewer="ann", out=out)
    server = make_server(bogus)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        page = json.loads(_get(server, f"/api/views/0/query/{doc['qid']}"))
        texts = page["texts"][0]
        assert texts["error"] is None and texts["texts"][doc["pid"]]["text"]
        for view, request, reason in (
                (1, {"qid": seer["qid"], "about": "extraction", "pid": "99",
                     "verdict": "agree"}, "not one of this query's extraction ids"),
                (1, {"qid": seer["qid"], "about": "candidate", "pid": samples[0],
                     "verdict": "agree"}, "not about 'candidate'"),
                (0, {"qid": doc["qid"], "about": "candidate", "pid": "no-such-doc",
                     "verdict": "agree"}, "not one of this query's candidate ids")):
            status, answer = _judge(server, view, **request)
            assert status == 400 and reason in answer["error"]
    finally:
        server.shutdown()
        server.server_close()
    assert bogus.seal() == []

    on_doc = {"qid": doc["qid"], "about": "candidate", "pid": doc["pid"]}
    on_extractions = [{"qid": seer["qid"], "about": "extraction", "pid": s} for s in samples]
    _review(folders, "ann", out, [(0, on_doc | {"verdict": "agree"})] + [
        (1, e | {"verdict": v}) for e, v in zip(on_extractions, ("agree", "disagree", "agree",
                                                                 "unsure"), strict=False)])
    rubric_review, seer_review = _review(folders, "bob", out, [
        (0, on_doc | {"verdict": "disagree"})] + [
        (1, e | {"verdict": v}) for e, v in zip(on_extractions, ("agree", "disagree",
                                                                 "disagree"), strict=False)])

    for review, labels, config in ((rubric_review, rubric, "review.cisi-sample.scripted"),
                                   (seer_review, seer2_build, "review.nq-sample.smollm2-135m")):
        assert CliRunner().invoke(cli, ["validate", str(review)]).exit_code == 0
        push([review], repo="lab/reviews")
        pulled = pull("lab/reviews", config=config, out=tmp_path / "pulled")
        assert {p.name: p.read_bytes() for p in pulled.iterdir()} == {
            p.name: p.read_bytes() for p in review.iterdir()}
        result = CliRunner().invoke(cli, ["score", str(pulled), "--against", str(labels),
                                          "--json"])
        assert result.exit_code == 0, result.output
        scored = json.loads(result.stdout)
        if labels == rubric:
            assert [(r["about"], r["agree"], r["disagree"]) for r in scored["about"]] == [
                ("candidate", 1, 1)]
            assert [(r["items"], r["same"]) for r in scored["between"]] == [(1, 0.0)]
        else:
            ann = dict(zip(samples, ("agree", "disagree", "agree", "unsure"), strict=False))
            bob = dict(zip(samples, ("agree", "disagree", "disagree"), strict=False))
            both = sorted(ann.keys() & bob.keys())
            (between,) = scored["between"]
            assert (between["reviewers"], between["items"]) == ("ann × bob", len(both))
            assert between["kappa"] == cohen_kappa([ann[s] for s in both],
                                                   [bob[s] for s in both])
            assert [r["reviewer"] for r in scored["reviewers"]] == ["ann", "bob", "all"]
            assert scored["about"][0]["about"] == "extraction"


def _get(server, path: str) -> bytes:
    connection = http.client.HTTPConnection(*server.server_address, timeout=30)
    connection.request("GET", path, headers={"Host": f"127.0.0.1:{server.port}",
                                             "X-Labeler-Token": server.token})
    return connection.getresponse().read()
