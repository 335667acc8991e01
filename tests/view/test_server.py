"""The server of `labeler view`: 127.0.0.1 only, no file outside the folders it was given, the
query list's filters and the verdict API."""

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
    viewing = open_viewing([labels], reviewer="ann", out=None)
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
