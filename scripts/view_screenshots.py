"""Take docs/view/*.png again: `labeler view`'s current page in the real headless Chromium
(/usr/bin/chromium, driven by Playwright as tests/view do) over real versions: the bundled
utility and SEER versions (tests/scoring/fixtures/utility-v1, seer-v1), a rubric version
SmolLM2 builds here over cisi-sample (two queries), and the review version a verdict made on
the page is sealed into.

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python scripts/view_screenshots.py [--rubric DIR]

`--rubric` reuses a version folder built before (`labeler build` with RUBRIC's arguments).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

from labeler.artifacts import load_artifact
from labeler.view import make_server, open_viewing

ROOT = Path(__file__).parents[1]
FIXTURES = ROOT / "tests" / "scoring" / "fixtures"
DOCS = ROOT / "docs" / "view"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
#: the shots' size in CSS pixels: a long page is cut at HEIGHT
WIDTH, HEIGHT = 1200, 1000
RUBRIC = ["build", "--artifact", "rubric", "--dataset", "cisi-sample", "--llm", "smollm2-135m",
          "--limit", "2", "--k", "20", "--rerank-k", "5", "--direct"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rubric", type=Path, help="a rubric version folder built before")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="view-shots-") as tmp:
        work = Path(tmp)
        rubric = args.rubric or _build_rubric(work)
        utility, seer = (shutil.copytree(FIXTURES / name, work / name)
                         for name in ("utility-v1", "seer-v1"))
        selection = work / "selection.jsonl"  # each query's first candidate
        selection.write_text("".join(json.dumps({"qid": r["qid"], "selected": [
            r["candidates"][0]["pid"]]}) + "\n" for r in load_artifact(utility).records))
        viewing = open_viewing([utility, seer, rubric], reviewer="ann", out=work / "reviews")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=FLAGS)
            page = browser.new_page(viewport={"width": WIDTH, "height": 800})
            with _serving(viewing) as url:
                _labels_pages(page, url, utility, seer, rubric)
            (review,) = viewing.seal()
            with _serving(open_viewing([review], reviewer="ann", out=work / "more")) as url:
                _shot(page, f"{url}#/v/0/q/{_first_qid(review)}", "pre", "record")
            with _serving(open_viewing([utility], reviewer="ann", out=work / "more",
                                       submissions=[selection])) as url:
                page.goto(f"{url}#/s/0")
                page.click("#scores th[data-sort=f1]")
                _shot(page, None, "#scores th:text('f1 ▲')", "submission")
            browser.close()


def _labels_pages(page, url: str, utility: Path, seer: Path, rubric: Path) -> None:
    """The views, the utility list and a query's page (with a verdict made), a seer and a
    rubric query."""
    _shot(page, f"{url}#/", "h2", "views")
    _shot(page, f"{url}#/v/0", "#queries a", "list")
    qid = _first_qid(utility, lambda r: r["utility_pids"])
    page.goto(f"{url}#/v/0/q/{qid}")
    page.wait_for_selector("#candidates")
    row = page.locator("#candidates tr[data-pid]").first
    box = row.locator(".verdict").first
    box.locator("input").fill("the passage holds the answer")
    box.locator("button[data-verdict=disagree]").click()
    page.wait_for_selector("#candidates .saved:text('saved')")
    _shot(page, None, "#candidates", "query")
    _shot(page, f"{url}#/v/1/q/{_first_qid(seer)}", "table.extractions", "seer")
    _shot(page, f"{url}#/v/2/q/{_first_qid(rubric)}", "table.heat", "rubric")


def _shot(page, address: str | None, ready: str, name: str) -> None:
    """Open `address` (None: stay), wait for `ready`, and write docs/view/NAME.png: the page's
    top, at most HEIGHT pixels of it."""
    if address is not None:
        page.goto(address)
    page.wait_for_selector(ready)
    height = min(HEIGHT, page.evaluate("document.documentElement.scrollHeight"))
    page.screenshot(path=DOCS / f"{name}.png", full_page=True,
                    clip={"x": 0, "y": 0, "width": WIDTH, "height": height})
    print(f"docs/view/{name}.png: {(DOCS / f'{name}.png').stat().st_size:,} bytes")


def _first_qid(folder: Path, keep=lambda record: True) -> str:
    return next(r["qid"] for r in load_artifact(folder).records if keep(r))


def _build_rubric(work: Path) -> Path:
    subprocess.run([sys.executable, "-m", "labeler", *RUBRIC, "--out", str(work / "out")],
                   check=True)
    return work / "out" / "rubric" / "cisi-sample" / "smollm2-135m" / "v1"


class _serving:
    """Within: `viewing` served on 127.0.0.1; its address (with its token) is the value."""

    def __init__(self, viewing):
        self.server = make_server(viewing)

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.server.url

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    main()
