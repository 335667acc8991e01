"""`fetch_url`, how KILT's knowledge source (a file outside the Hub) is downloaded: once into
the cache, and a cut download resumes where it stopped, by an HTTP range request to the tests'
server serving the mirror's KILT pages (tests/support/hub_mirror.py)."""

from __future__ import annotations

from pathlib import Path

from support.hub_mirror import FIXTURES, KILT_SOURCE_PATH
from support.hub_server import HubServer

from labeler.sources.hubload import fetch_url


def test_a_cut_download_resumes_and_a_whole_one_is_read_from_the_cache(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    pages = (FIXTURES / "hub_mirror" / "kilt_knowledgesource.jsonl").read_bytes()
    with HubServer() as hub:
        url = hub.static(KILT_SOURCE_PATH, pages)

        def fetch() -> Path:
            return Path(fetch_url(url, what="corpus 'kilt-wikipedia'",
                                  repo="facebook/kilt_wikipedia"))

        path = fetch()
        assert path.read_bytes() == pages
        # a download cut a third of the way: its part holds bytes only this test wrote, so
        # the file that comes out shows that only the rest was asked for
        third = len(pages) // 3
        path.unlink()
        path.with_name(path.name + ".part").write_bytes(b"#" * third)
        assert fetch().read_bytes() == b"#" * third + pages[third:]
        requests = len(hub.log)
        assert fetch() == path and len(hub.log) == requests  # whole: read from the cache
