"""The server of `labeler view`: 127.0.0.1 only, no file outside the folders it was given, the
query list's filters, the verdict API and a submission's per-query scores."""

from __future__ import annotations

import http.client
import json
import threading

import pytest

from labeler.artifacts import load_artifact
from labeler.view import make_server, open_viewing


@pytest.fixture
def server(labels, tmp_path):
    (tmp_path / "secret.txt").write_text("not for the page")
    yield from _serving(open_viewing([labels], reviewer="ann", out=None))


def _serving(viewing):
    server = make_server(viewing)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _get(server, path: str, method: str = "GET", body: dict | None = None):
    connection = http.client.HTTPConnection(*server.server_address, timeout=10)
    connection.request(method, path, body=json.dumps(body) if body else None)
    response = connection.getresponse()
    return response.status, response.read()


def test_binds_to_the_loopback_address_only(server):
    assert server.server_address[0] == "127.0.0.1"


@pytest.mark.parametrize("path", [
    "/static/../../../../../../etc/passwd",
    "/static/%2e%2e%2f%2e%2e%2fserver.py",
    "/files/0/0/../../../../secret.txt",
    "/files/0/0/..%2F..%2F..%2F..%2F..%2Fsecret.txt",
    "/files/0/0/%2Fetc%2Fpasswd",
])
def test_no_path_outside_the_given_folders_is_served(server, path):
    status, body = _get(server, path)

    assert status in (403, 404)
    assert b"not for the page" not in body and b"root:" not in body


def test_a_version_folder_file_and_the_page_itself_are_served(server, labels):
    status, body = _get(server, "/files/0/0/manifest.json")
    assert status == 200 and json.loads(body)["artifact"] == "utility"
    status, body = _get(server, "/")
    assert status == 200 and b"/static/app.js" in body


def test_the_list_filters_and_a_verdict_comes_back_with_the_query(server, labels):
    records = load_artifact(labels).records
    known = sorted(r["qid"] for r in records if r["known"])

    status, body = _get(server, "/api/views/0/queries?filter=known")
    assert status == 200
    assert sorted(row["key"] for row in json.loads(body)["rows"]) == known
    status, body = _get(server, "/api/views/0/queries?filter=nonsense")
    assert status == 400 and b"unknown filter" in body

    qid = records[0]["qid"]
    status, _ = _get(server, "/api/views/0/verdict", "POST",
                     {"version": 0, "qid": qid, "pid": None, "verdict": "agree"})
    assert status == 200
    status, body = _get(server, f"/api/views/0/query/{qid}")
    assert [v["verdict"] for v in json.loads(body)["verdicts"][0]] == ["agree"]
    status, body = _get(server, "/api/views/0/verdict", "POST",
                        {"version": 0, "qid": qid, "pid": None, "verdict": "perhaps"})
    assert status == 400


def test_a_submission_is_listed_with_the_per_query_scores_labeler_score_gives(labels, tmp_path):
    from labeler.scoring.score import score

    records = load_artifact(labels).records
    submission = tmp_path / "selection.jsonl"  # each query's first two candidates
    submission.write_text("".join(json.dumps({"qid": r["qid"], "selected": [
        c["pid"] for c in r["candidates"][:2]]}) + "\n" for r in records[:2]))
    expected = {row["qid"]: row for row in score(submission, labels).rows()}
    server = next(_serving(open_viewing([labels], reviewer="ann", out=None,
                                        submissions=[submission])))
    try:
        (listed,) = json.loads(_get(server, "/api/submissions")[1])
        assert (listed["kind"], listed["reference"]) == ("selection", "smollm2-135m v1")
        assert listed["metrics"] == ["precision", "recall", "f1", "accuracy"]

        status, body = _get(server, "/api/submissions/0?sort=f1&desc=1")
        assert status == 200
        rows = json.loads(body)["rows"]
        assert [row["qid"] for row in rows] == sorted(
            expected, key=lambda q: -1 if expected[q]["f1"] is None else expected[q]["f1"],
            reverse=True)
        for row in rows:
            record = next(r for r in records if r["qid"] == row["qid"])
            assert {k: row[k] for k in expected[row["qid"]]} == expected[row["qid"]]
            selected = None if record is records[2] else [c["pid"] for c in
                                                          record["candidates"][:2]]
            assert (row["question"], row["gold"], row["submitted"]) == (
                record["question"], record["utility_pids"], selected)
        assert [r["missing"] for r in rows].count(True) == 1  # the third query: scored 0
        status, body = _get(server, "/api/submissions/0?sort=nonsense")
        assert status == 400 and b"cannot sort by" in body
    finally:
        server.shutdown()
        server.server_close()
