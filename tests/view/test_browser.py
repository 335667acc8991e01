"""`labeler view` driven in a real headless Chromium: SmolLM2's nq2 build (built once per
session) beside the scripted reader's labels of the same pools, filtered to the queries where
they disagree; a verdict made on a query's page is still there after a reload, and the server
writes it as a review version; a selection's per-query scores sort and lead to a query's page.
Screenshots go to the test's tmp folder."""

from __future__ import annotations

import json
import threading

import pytest
from support.nq2 import copy_nq2_build, scripted_utility

from labeler.artifacts import load_artifact
from labeler.view import make_server, open_viewing

pytestmark = pytest.mark.slow


@pytest.fixture
def site(nq2_build, tmp_path):
    """The server over both LLMs' versions and a selection of each query's first candidate:
    (its address, the Viewing, both folders)."""
    run, _, smollm = copy_nq2_build(nq2_build, tmp_path)
    scripted, _ = scripted_utility(run, tmp_path / "out")
    selection = tmp_path / "selection.jsonl"
    selection.write_text("".join(json.dumps({"qid": r["qid"], "selected": [
        r["candidates"][0]["pid"]]}) + "\n" for r in load_artifact(smollm).records))
    viewing = open_viewing([smollm, scripted], reviewer="ann", out=None,
                           submissions=[selection])
    server = make_server(viewing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.url, viewing, (smollm, scripted)
    server.shutdown()
    server.server_close()


def _disagreements(folders) -> list[str]:
    """The qids whose utility labels or closed-book correctness differ between the LLMs."""
    first, second = ({r["qid"]: r for r in load_artifact(f).records} for f in folders)
    return sorted(q for q in first if (sorted(first[q]["utility_pids"]), first[q]["known"])
                  != (sorted(second[q]["utility_pids"]), second[q]["known"]))


def test_filter_open_mark_reload_and_the_verdict_is_kept(browser, site, tmp_path):
    url, viewing, folders = site
    disagree = _disagreements(folders)
    assert disagree, "the two readers should disagree on some query"
    page = browser.new_page(viewport={"width": 1400, "height": 900})

    page.goto(f"{url}#/v/0")
    page.click("button[data-filter=disagree]")
    page.wait_for_selector("button.on[data-filter=disagree]")
    page.screenshot(path=tmp_path / "list.png", full_page=True)
    assert sorted(page.locator("#queries a").all_inner_texts()) == disagree
    assert page.locator("#stats th").all_inner_texts()[1:3] == ["smollm2-135m v1", "scripted v1"]

    page.click(f"#queries a:text-is('{disagree[0]}')")
    page.wait_for_selector("#candidates")
    llms = page.locator("#candidates th").all_inner_texts()[2:]
    assert llms == ["smollm2-135m", "scripted"]
    row = page.locator("#candidates tr[data-pid]").first
    pid = row.get_attribute("data-pid")
    box = row.locator(".verdict[data-version='1']")
    box.locator("input").fill("the passage holds the answer")
    box.locator("button[data-verdict=disagree]").click()
    page.wait_for_selector(f"tr[data-pid='{pid}'] .verdict[data-version='1'] .saved:text('saved')")
    page.screenshot(path=tmp_path / "query.png", full_page=True)

    page.reload()
    page.wait_for_selector("#candidates")
    kept = page.locator(f"tr[data-pid='{pid}'] .verdict[data-version='1']")
    assert kept.locator("button.on").inner_text() == "disagree"
    assert kept.locator("input").input_value() == "the passage holds the answer"
    page.screenshot(path=tmp_path / "reloaded.png", full_page=True)

    page.goto(f"{url}#/s/0")
    page.click("#scores th[data-sort=f1]")
    page.wait_for_selector("#scores th:text('f1 ▲')")
    page.screenshot(path=tmp_path / "submission.png", full_page=True)
    scores = viewing.submissions[0].page(sort="f1")["rows"]
    assert page.locator("#scores tr[data-qid]").evaluate_all(
        "rows => rows.map(r => r.dataset.qid)") == [row["qid"] for row in scores]
    page.click(f"#scores a:text-is('{scores[0]['qid']}')")
    page.wait_for_selector("#candidates")
    page.close()

    (review,) = viewing.seal()
    assert [(r["llm"], r["qid"], r["pid"], r["verdict"]) for r in load_artifact(review).records
            ] == [("scripted", disagree[0], pid, "disagree")]
    assert {p.name for p in tmp_path.glob("*.png")} == {"list.png", "query.png", "reloaded.png",
                                                       "submission.png"}


def test_a_seer_query_shows_its_extractions_scores_and_pairs(browser, seer2_build, tmp_path):
    records = {r["qid"]: r for r in load_artifact(seer2_build).records}
    qid, record = next(iter(records.items()))
    viewing = open_viewing([seer2_build], reviewer="ann", out=tmp_path)
    server = make_server(viewing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    try:
        page.goto(f"{server.url}#/v/0/q/{qid}")
        page.wait_for_selector("table.extractions")
        page.screenshot(path=tmp_path / "seer.png", full_page=True)
        ranks = page.locator("table.extractions tr td:first-child").all_inner_texts()
        assert ranks == [str(e["rank"]) for e in record["extractions"]]
        assert page.locator("table.pairs tr").count() - 1 == len(
            viewing.views[0].versions[0].table_records(qid).get("pairs", []))
        assert page.locator("table.passages tr").count() - 1 == len(record["candidates"])
        assert record["full_answer"].strip()[:20] in page.inner_text("main") or \
            not record["full_answer"].strip()
        sample = str(record["extractions"][0]["sample"])
        page.click(f"tr[data-sample='{sample}'] button[data-verdict=agree]")
        page.wait_for_selector(f"tr[data-sample='{sample}'] .saved:text-is('saved')")
    finally:
        page.close()
        server.shutdown()
        server.server_close()
    (review,) = viewing.seal()
    assert [(r["about"], r["pid"], r["verdict"]) for r in load_artifact(review).records] == [
        ("extraction", sample, "agree")]
