"""The page of `labeler view` in a real headless Chromium, over the three nq-sample records
(no model needed): a page on another 127.0.0.1 port cannot write a verdict; the page itself
works under its CSP without a console error, and a reviewer goes through the three queries
with the keyboard alone; a write that fails says "not saved" and is kept for "retry"."""

from __future__ import annotations

import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from labeler.artifacts import load_artifact
from labeler.view import make_server, open_viewing


@pytest.fixture
def viewer(labels, tmp_path):
    """The viewer of `labels`, reviewer ann, verdicts under tmp_path/reviews: (server, viewing)."""
    viewing = open_viewing([labels], reviewer="ann", out=tmp_path / "reviews")
    server = make_server(viewing)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server, viewing
    server.shutdown()
    server.server_close()


#: the attacker's page: a text/plain form POST (into a frame), a no-cors fetch and a JSON
#: fetch (CORS: preflighted) at the viewer, then its title says it is done
ATTACK = """<!doctype html><title>attacking</title>
<iframe name="sink"></iframe>
<form id="form" method="POST" enctype="text/plain" target="sink" action="{target}">
<input name='{{"version":0,"qid":"{qid}","about":"query","pid":null,"verdict":"disagree","note":"' value='form"}}'>
</form>
<script>
const body = JSON.stringify({{version: 0, qid: "{qid}", about: "query", pid: null,
                              verdict: "disagree", note: "fetch"}});
const tries = [
  fetch("{target}", {{method: "POST", mode: "no-cors", body,
                     headers: {{"Content-Type": "text/plain", "X-Labeler-Token": "guess"}}}}),
  fetch("{target}", {{method: "POST", body, headers: {{"Content-Type": "application/json"}}}}),
  fetch("{target}", {{method: "POST", body,
                     headers: {{"Content-Type": "application/json", "X-Labeler-Token": "guess"}}}}),
  new Promise(done => {{ document.querySelector("iframe").onload = done;
                        document.getElementById("form").submit(); }}),
];
Promise.allSettled(tries).then(results => {{
  document.title = "done " + results.map(r => r.status).join(",");
}});
</script>"""


def test_a_page_on_another_origin_writes_no_verdict(browser, viewer, labels, tmp_path):
    server, viewing = viewer
    qid = load_artifact(labels).records[0]["qid"]
    site = tmp_path / "attacker"
    site.mkdir()
    (site / "attack.html").write_text(ATTACK.format(
        target=f"http://127.0.0.1:{server.port}/api/views/0/verdict", qid=qid))
    attacker = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler,
                                                               directory=str(site)))
    threading.Thread(target=attacker.serve_forever, args=(0.05,), daemon=True).start()
    page = browser.new_page()
    try:
        page.goto(f"http://127.0.0.1:{attacker.server_address[1]}/attack.html")
        page.wait_for_function("document.title.startsWith('done')", timeout=15000)
        # the form was posted (the frame loaded the refusal); the fetches failed or were opaque
        assert page.title().startswith("done ")
    finally:
        page.close()
        attacker.shutdown()
        attacker.server_close()

    assert viewing.seal() == []  # nothing to seal: no verdict was kept
    assert not (tmp_path / "reviews").exists()


def test_the_page_under_its_csp_a_keyboard_only_review_and_a_failed_write(
        browser, viewer, labels, tmp_path):
    server, viewing = viewer
    qids = [r["qid"] for r in load_artifact(labels).records]
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        page.goto(f"{server.url}#/v/0?filter=unreviewed")
        page.wait_for_selector("#progress:text('reviewed by me: 0 of 3')")
        page.keyboard.press("n")  # the first query not yet reviewed
        for n, qid in enumerate(qids):
            page.wait_for_selector(f"#question:text-is({json.dumps(_question(labels, n))})")
            assert page.url.endswith(f"/q/{qid}?filter=unreviewed&q=")
            if n == 0:  # a note typed before its verdict is kept, then saved with it
                page.keyboard.press("e")
                page.keyboard.type("typed first")
                page.keyboard.press("Enter")
                page.wait_for_selector(".verdict.selected .pending:text('note kept')")
            page.keyboard.press("a")  # the selected box: the query's
            page.wait_for_selector(".verdict.selected .saved:text-is('saved')")
            page.keyboard.press("j")  # the first candidate's
            page.keyboard.press("d")
            page.keyboard.press("e")
            page.keyboard.type(f"note {n}")
            page.keyboard.press("Enter")
            page.wait_for_selector(".verdict.selected .saved:text-is('saved')")
            page.wait_for_selector(f"#progress:text('reviewed by me: {n + 1} of 3')")
            page.keyboard.press("n")
        assert page.locator("#next").count() == 0  # the last one: no next
        page.reload()
        page.wait_for_selector(".verdict.selected")
        assert page.locator(".verdict[data-about=candidate] button.on").first.inner_text() \
            == "disagree"
        assert problems == []  # the CSP refused nothing the page does

        # a write that fails says "not saved", keeps the verdict and sends it on "retry"
        page.route("**/verdict", lambda route: route.abort())
        page.keyboard.press("u")
        page.wait_for_selector(".verdict.selected .unsaved:text('not saved')")
        page.unroute("**/verdict")
        page.click(".verdict.selected button.retry")
        page.wait_for_selector(".verdict.selected .saved:text-is('saved')")
    finally:
        page.close()

    (review,) = viewing.seal()
    kept = {(r["qid"], r["about"], r["verdict"], r["note"]) for r in load_artifact(review).records}
    assert kept == {(qids[0], "query", "agree", "typed first"), (qids[1], "query", "agree", ""),
                    (qids[2], "query", "unsure", "")} | {
        (qid, "candidate", "disagree", f"note {n}") for n, qid in enumerate(qids)}


def _question(labels, n: int) -> str:
    return load_artifact(labels).records[n]["question"]


def test_a_long_passage_is_cut_with_show_all_and_an_empty_answer_says_so(browser, write,
                                                                         records, tmp_path):
    record = json.loads(json.dumps(records[0]))  # a copy: a 1 MB passage, no closed-book answer
    record["candidates"][0]["text"] = "word " * 200_000
    record["closed_book_answer"] = ""
    viewing = open_viewing([write([record])], reviewer="ann", out=tmp_path / "reviews")
    server = make_server(viewing)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    page = browser.new_page()
    try:
        page.goto(f"{server.url}#/v/0/q/{record['qid']}")
        cell = page.locator("#candidates td.passage").first
        cell.locator("button.all").wait_for()
        assert len(cell.inner_text()) < 2500
        assert "(empty)" in page.locator("td.answer").first.inner_text()
        cell.locator("button.all").click()
        assert len(cell.inner_text()) > 900_000
    finally:
        page.close()
        server.shutdown()
        server.server_close()


def test_a_review_versions_query_page_shows_every_verdict_on_it(browser, labels, tmp_path):
    from labeler.artifacts.manifest import read_manifest
    from labeler.view.verdicts import Verdicts

    record = load_artifact(labels).records[0]
    for reviewer, verdict in (("ann", "agree"), ("bob", "disagree")):
        verdicts = Verdicts(labels, read_manifest(labels), out=tmp_path, reviewer=reviewer)
        verdicts.add(qid=record["qid"], pid=None, verdict=verdict)
        verdicts.add(qid=record["qid"], pid=record["candidates"][0]["pid"], verdict="unsure")
        review = verdicts.seal()  # bob's on top of ann's: four verdicts on one query
    viewing = open_viewing([review], reviewer="ann", out=tmp_path / "reviews")
    server = make_server(viewing)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    page = browser.new_page()
    try:
        page.goto(f"{server.url}#/v/0/q/{record['qid']}")
        page.wait_for_selector("main pre")
        shown = [json.loads(text) for text in page.locator("main pre").all_inner_texts()]
    finally:
        page.close()
        server.shutdown()
        server.server_close()
    assert [(r["reviewer"], r["about"], r["verdict"]) for r in shown] == [
        ("ann", "candidate", "unsure"), ("ann", "query", "agree"),
        ("bob", "candidate", "unsure"), ("bob", "query", "disagree")]
