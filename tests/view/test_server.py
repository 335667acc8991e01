"""The server of `labeler view`: 127.0.0.1 only, its own page only (Host, token, JSON writes
from no foreign origin, security headers), no file but the page's, the query list's filters
and neighbours, verdicts checked against the version they judge, and a submission's scores."""

from __future__ import annotations

import http.client
import json
import socket
import threading

import pytest

from labeler.artifacts import load_artifact
from labeler.view import make_server, open_viewing

UNSET = object()


@pytest.fixture
def server(labels, tmp_path):
    (tmp_path / "secret.txt").write_text("not for the page")
    yield from _serving(open_viewing([labels], reviewer="ann", out=tmp_path / "reviews"))


def _serving(viewing):
    server = make_server(viewing)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _call(server, path: str, body: object = UNSET, *, host: str | None = None,
          token: str | None = None, kind: str = "application/json", origin: str | None = None,
          raw: bytes | None = None):
    """(status, headers, body) of a request as the page makes it, unless told otherwise."""
    connection = http.client.HTTPConnection(*server.server_address, timeout=10)
    headers = {"Host": host or f"127.0.0.1:{server.port}",
               "X-Labeler-Token": server.token if token is None else token}
    if origin:
        headers["Origin"] = origin
    data = raw if raw is not None else None if body is UNSET else json.dumps(body).encode()
    if data is not None:
        headers["Content-Type"] = kind
    connection.request("GET" if data is None else "POST", path, body=data, headers=headers)
    response = connection.getresponse()
    return response.status, dict(response.getheaders()), response.read()


def _verdict(records, **changes) -> dict:
    return {"version": 0, "qid": records[0]["qid"], "about": "query", "pid": None,
            "verdict": "agree", "note": ""} | changes


def test_binds_to_the_loopback_address_only(server):
    assert server.server_address[0] == "127.0.0.1"
    assert server.url == f"http://127.0.0.1:{server.port}/?token={server.token}"


@pytest.mark.parametrize("path", [
    "/static/../../../../../../etc/passwd",
    "/static/%2e%2e%2f%2e%2e%2fserver.py",
    "/static/index.html",
    "/files/0/0/manifest.json",
    "/files/0/0/../../../../secret.txt",
])
def test_no_file_but_the_pages_own_is_served(server, path):
    status, _, body = _call(server, path)

    assert status == 404
    assert b"not for the page" not in body and b"root:" not in body and b"artifact" not in body


def test_the_page_carries_its_token_and_every_answer_the_security_headers(server):
    status, headers, body = _call(server, f"/?token={server.token}")
    assert status == 200 and b"/static/app.js" in body
    assert f'content="{server.token}"'.encode() in body
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    assert "unsafe-inline" not in headers["Content-Security-Policy"]
    assert (headers["X-Content-Type-Options"], headers["Referrer-Policy"],
            headers["Cross-Origin-Resource-Policy"]) == ("nosniff", "no-referrer", "same-origin")
    status, headers, _ = _call(server, "/static/app.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}", "127.0.0.1",
                                  "127.0.0.1:1", "localhost.attacker.example:{port}"])
def test_another_host_name_is_refused_dns_rebinding(server, labels, host):
    host = host.format(port=server.port)
    for path in ("/api/views", f"/?token={server.token}", "/static/app.js"):
        status, _, body = _call(server, path, host=host)
        assert status == 403 and b"Host is not this server" in body
    status, _, _ = _call(server, "/api/views/0/verdict", _verdict(load_artifact(labels).records),
                         host=host)
    assert status == 403
    assert _call(server, "/api/views", host=f"localhost:{server.port}")[0] == 200


def test_without_the_token_neither_the_page_nor_the_api_answers(server):
    for path, token in (("/", ""), ("/?token=wrong", ""), ("/api/views", ""),
                        ("/api/views", "wrong")):
        status, _, body = _call(server, path, token=token)
        assert status == 403 and b"token" in body


def test_a_write_is_json_with_the_token_from_no_foreign_origin(server, labels, tmp_path):
    body = _verdict(load_artifact(labels).records)
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        status, _, answer = _call(server, "/api/views/0/verdict", body, kind=kind)
        assert status == 415 and b"application/json" in answer
    assert _call(server, "/api/views/0/verdict", body, token="")[0] == 403
    assert _call(server, "/api/views/0/verdict", body, token="a" * 43)[0] == 403
    assert _call(server, "/api/views/0/verdict", body,
                 origin="http://127.0.0.1:1")[0] == 403
    assert _call(server, "/api/views/0/verdict", body, origin="null")[0] == 403
    assert not list((tmp_path / "reviews").glob("review/*/*/.journal*"))

    status, _, answer = _call(server, "/api/views/0/verdict", body,
                              origin=f"http://127.0.0.1:{server.port}")
    assert status == 200 and json.loads(answer)["verdict"] == "agree"


def test_a_verdict_on_nothing_real_is_refused_in_one_line_and_nothing_is_written(
        server, labels, tmp_path):
    records = load_artifact(labels).records
    pid = records[0]["candidates"][0]["pid"]
    other = records[1]["candidates"][0]["pid"]
    bad = [
        (_verdict(records, qid="no-such-query"), "no query"),
        (_verdict(records, qid=["a"]), "'qid': must be a string"),
        (_verdict(records, qid=7), "'qid': must be a string"),
        (_verdict(records, about="candidate", pid="no-such-pid"), "not one of this query"),
        (_verdict(records, about="candidate", pid=other), "not one of this query"),
        (_verdict(records, about="candidate", pid=None), "not one of this query"),
        (_verdict(records, pid=pid), "is not null"),
        (_verdict(records, about="extraction", pid=pid), "not about 'extraction'"),
        (_verdict(records, verdict="perhaps"), "is no verdict"),
        (_verdict(records, verdict=True), "'verdict': must be a string"),
        (_verdict(records, version=1), "no version 1"),
        (_verdict(records, version="0"), "'version': must be an integer"),
        (_verdict(records, note="x" * 4097), "at most 4096 bytes"),
        (_verdict(records, note="é" * 2049), "at most 4096 bytes"),
        (_verdict(records, extra=1), "unknown field 'extra'"),
        ([1, 2], "not a JSON object"),
    ]
    for body, reason in bad:
        status, _, answer = _call(server, "/api/views/0/verdict", body)
        assert status == 400, body
        message = json.loads(answer)["error"]
        assert reason in message and "\n" not in message, (body, message)
    assert _call(server, "/api/views/0/verdict", raw=b"{not json")[0] == 400
    status, _, answer = _call(server, "/api/views/0/verdict", raw=b"{" + b" " * 70000 + b"}")
    assert status == 413
    assert not (tmp_path / "reviews").exists()  # nothing written, not even a folder

    ok = _verdict(records, about="candidate", pid=pid, note="x" * 4096)
    assert _call(server, "/api/views/0/verdict", ok)[0] == 200


def test_the_list_filters_neighbours_progress_and_a_verdict_comes_back(server, labels):
    records = load_artifact(labels).records
    qids = [r["qid"] for r in records]
    known = sorted(r["qid"] for r in records if r["known"])

    status, _, body = _call(server, "/api/views/0/queries?filter=known")
    assert status == 200
    assert sorted(row["key"] for row in json.loads(body)["rows"]) == known
    status, _, body = _call(server, "/api/views/0/queries?filter=nonsense")
    assert status == 400 and b"unknown filter" in body

    assert _call(server, "/api/views/0/verdict", _verdict(records))[0] == 200
    status, _, body = _call(server, f"/api/views/0/query/{qids[0]}")
    assert [v["verdict"] for v in json.loads(body)["verdicts"][0]] == ["agree"]
    listed = json.loads(_call(server, "/api/views/0/queries?filter=unreviewed")[2])
    assert [row["key"] for row in listed["rows"]] == qids[1:]
    assert (listed["judged"], listed["queries"]) == (1, 3)
    # the reviewed query keeps its place: its next is the first not yet reviewed after it
    around = json.loads(_call(server, f"/api/views/0/neighbours/{qids[0]}?filter=unreviewed")[2])
    assert (around["previous"], around["next"], around["judged"]) == (None, qids[1], 1)
    around = json.loads(_call(server, f"/api/views/0/neighbours/{qids[2]}")[2])
    assert (around["previous"], around["next"]) == (qids[1], None)


def test_a_submission_is_listed_with_the_per_query_scores_labeler_score_gives(labels, tmp_path):
    from labeler.scoring.score import score

    records = load_artifact(labels).records
    submission = tmp_path / "selection.jsonl"  # each query's first two candidates
    submission.write_text("".join(json.dumps({"qid": r["qid"], "selected": [
        c["pid"] for c in r["candidates"][:2]]}) + "\n" for r in records[:2]))
    expected = {row["qid"]: row for row in score(submission, labels).rows()}
    serving = _serving(open_viewing([labels], reviewer="ann", out=None, submissions=[submission]))
    server = next(serving)
    try:
        (listed,) = json.loads(_call(server, "/api/submissions")[2])
        assert (listed["kind"], listed["reference"]) == ("selection", "smollm2-135m v1")
        assert listed["metrics"] == ["precision", "recall", "f1", "accuracy"]

        status, _, body = _call(server, "/api/submissions/0?sort=f1&desc=1")
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
        status, _, body = _call(server, "/api/submissions/0?sort=nonsense")
        assert status == 400 and b"cannot sort by" in body
    finally:
        next(serving, None)


def _raw(server, request: bytes) -> tuple[int, dict, dict]:
    """(status, headers, JSON body) of `request` sent as it is on a fresh connection."""
    with socket.create_connection(server.server_address, timeout=10) as connection:
        connection.sendall(request)
        response = http.client.HTTPResponse(connection)
        response.begin()
        return response.status, dict(response.getheaders()), json.loads(response.read())


@pytest.mark.parametrize(("request_line", "headers", "body", "status"), [
    ("GET /api/views/-1/queries", "", b"", 400),  # not the last view counted from the end
    ("GET /api/views/0/queries?offset=-2", "", b"", 400),
    ("GET /api/views/0/queries?limit=-1", "", b"", 400),
    ("GET /api/views/0/queries?offset=99999999999999999999", "", b"", 200),
    ("GET /api/submissions/-1", "", b"", 400),
    ("POST /api/views/-1/verdict", "", b"{}", 400),
    ("POST /api/views/0/verdict", "", b"[" * 30000 + b"]" * 30000, 400),
    ("POST /api/views/0/verdict", "Content-Length: -1\r\n", b"{}", 400),
    ("GET /api/views", "Host: attacker.example:{port}\r\n", b"", 403),  # a second Host
    ("PUT /api/views", "", b"", 501),
    ("GET /" + "a" * 70000, "", b"", 414),
])
def test_an_odd_request_gets_one_json_line_with_the_headers(server, request_line, headers,
                                                            body, status):
    length = "" if "Content-Length" in headers else f"Content-Length: {len(body)}\r\n"
    request = (f"{request_line} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
               f"X-Labeler-Token: {server.token}\r\nContent-Type: application/json\r\n"
               f"{headers.format(port=server.port)}{length}Connection: close\r\n\r\n")

    got, answered, answer = _raw(server, request.encode() + body)

    assert got == status, answer
    assert answered["Content-Security-Policy"].startswith("default-src 'self'")
    assert status == 200 or "\n" not in answer["error"]


def test_on_port_80_a_browsers_host_and_origin_without_the_port_are_the_servers_own():
    from email.message import Message

    from labeler.view.guard import TOKEN_HEADER, Refused, check_host, check_write

    headers = Message()
    for name, value in (("Host", "127.0.0.1"), ("Origin", "http://localhost"),
                        ("Content-Type", "application/json"), (TOKEN_HEADER, "secret")):
        headers[name] = value
    check_host(headers, 80)  # http://127.0.0.1/ : HTTP's default port is left out
    check_write(headers, 80, "secret")
    with pytest.raises(Refused):
        check_host(headers, 8080)
    with pytest.raises(Refused):
        check_write(headers, 8080, "secret")


def test_a_head_request_gets_the_headers_and_no_body(server):
    with socket.create_connection(server.server_address, timeout=10) as connection:
        connection.sendall(f"HEAD / HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                           "Connection: close\r\n\r\n".encode())
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk

    assert answer.startswith(b"HTTP/1.0 501") and answer.endswith(b"\r\n\r\n")
    assert b"Content-Security-Policy" in answer
