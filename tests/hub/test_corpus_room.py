"""A named corpus's first use checks the cache's disk for room before it downloads or stores
anything (issue 49): one line naming the folder, what is needed and what is free; exit 1;
nothing downloaded, nothing half-written. A disk that fills anyway, in the store or in the BM25
index built after it, is one line too. The disk is a real tmpfs (`disk`, tests/conftest.py),
the corpora the real sources: the tests' Hub mirror and a local copy of KILT's pages."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from support.console import run_main
from support.hub_mirror import CONTENT, FIXTURES, seed_mirror

from labeler.sources.corpus import COMPRESSED
from labeler.sources.hub_files import HUB_FILES

DATASET = FIXTURES / "flashrag_nq_test.jsonl"  # 17 NQ questions, FlashRAG layout
KILT_PAGES = FIXTURES / "hub_mirror" / "kilt_knowledgesource.jsonl"
CISI = Path(__file__).parents[2] / "labeler" / "data" / "cisi_sample" / "corpus.jsonl.gz"  # bundled
ROOM = "(free some space, or point --cache-dir (or $LABELER_CACHE_DIR) at a disk with room, " \
       "then run the same command again)"


def _retrieve(monkeypatch, capsys, tmp_path: Path, corpus: str, cache: Path):
    return run_main(monkeypatch, capsys, "retrieve", "--dataset", f"jsonl:{DATASET}",
                    "--corpus", corpus, "--encoder", "bm25", "--k", 3,
                    "--out", tmp_path / "run.trec", "--cache-dir", cache)


def _stored(cache: Path) -> list[str]:
    """What the cache's corpora folder holds but the lock files the store waits on (empty)."""
    return [p.name for p in (cache / "corpora").iterdir() if p.suffix != ".lock"]


def _kib(count: int) -> str:
    return f"{count / 1024:.1f} KiB"


def test_a_hub_corpus_is_sized_from_the_hub_listing_before_its_download(
        hub, disk, tmp_path, monkeypatch, capsys):
    seed_mirror(hub)
    cache = disk(16, free=1) / "cache"  # 4 KiB free
    needed = COMPRESSED * len(CONTENT["wiki-dpr"]())  # the served file, gzip'd JSON lines

    code, _, err = _retrieve(monkeypatch, capsys, tmp_path, "wiki-dpr", cache)

    assert (code, err) == (1, (f"error: cannot write {cache / 'corpora'}: storing corpus "
                               f"'wiki-dpr' needs about {_kib(needed)} and the disk has 4.0 KiB "
                               f"free {ROOM}\n"))
    assert not [line for line in hub.log if HUB_FILES["wiki-dpr"].files[0] in line
                and line.startswith("GET")]  # asked its size, never downloaded it
    assert _stored(cache) == []


@pytest.mark.parametrize("corpus", ["kilt-w100", "kilt-wikipedia"])
def test_a_corpus_cut_from_kilts_pages_is_sized_from_its_source(corpus, disk, tmp_path,
                                                                monkeypatch, capsys):
    monkeypatch.setenv("LABELER_KILT_SOURCE", str(KILT_PAGES))  # a local copy
    cache = disk(16, free=0) / "cache"

    code, _, err = _retrieve(monkeypatch, capsys, tmp_path, corpus, cache)

    assert (code, err) == (1, (f"error: cannot write {cache / 'corpora'}: storing corpus "
                               f"'{corpus}' needs about {_kib(KILT_PAGES.stat().st_size)} and "
                               f"the disk has 0 B free {ROOM}\n"))
    assert _stored(cache) == []


def test_a_killed_stores_leftovers_do_not_count_against_the_room(disk, tmp_path, monkeypatch):
    """A store killed part-way leaves its `.partial` folder, removed when the next run stores
    the corpus: its bytes are not room the next store lacks."""
    from labeler.sources.flashrag import read_corpus

    corpus = CISI
    monkeypatch.setenv("LABELER_CACHE_DIR", str(tmp_path / "roomy"))
    stored = read_corpus(corpus)  # where the store goes (a folder named by the file's key)
    (folder,) = (tmp_path / "roomy" / "corpora").glob("*[!k]")  # not the .lock
    cache = disk(300) / "cache"  # 1.2 MiB: room for the corpus, not for it and its leftovers
    leftovers = cache / "corpora" / f"{folder.name}.partial"
    leftovers.mkdir(parents=True)
    (leftovers / "passages.arrow").write_bytes(bytes(160 * 4096))  # a killed store's
    assert COMPRESSED * corpus.stat().st_size > 140 * 4096  # more than the disk has left
    monkeypatch.setenv("LABELER_CACHE_DIR", str(cache))

    again = read_corpus(corpus)

    assert (len(again), again.fingerprint) == (len(stored), stored.fingerprint)
    assert not leftovers.exists()

FULL = "(full, or over quota) (free some space or write somewhere else, then run the same " \
       "command again)"


def test_a_cache_disk_that_fills_while_storing_a_corpus_is_one_line(disk, tmp_path,
                                                                    monkeypatch, capsys):
    """A plain file's estimate (its bytes) can fall a few pages short of the stored table:
    the disk then fills in the write (numpy's short write of the keys was a traceback, "965
    requested and 0 written"), said on one line naming the folder, nothing left."""
    corpus = tmp_path / "cisi.jsonl"
    corpus.write_bytes(gzip.decompress(CISI.read_bytes()))  # the bundled CISI corpus, plain
    cache = disk(-(-corpus.stat().st_size // 4096) + 1) / "cache"  # the estimate, not the table

    code, _, err = _retrieve(monkeypatch, capsys, tmp_path, str(corpus), cache)

    *said, line = err.splitlines()  # after any progress line, the error's
    start = f"error: cannot write {cache / 'corpora'}: "
    assert (code, line.startswith(start), line.endswith(FULL)) == (1, True, True), err
    assert not [s for s in said if s.startswith(("error", "Traceback"))], err
    assert _stored(cache) == []


def test_a_cache_disk_that_fills_while_building_the_bm25_index_is_one_line(disk, tmp_path,
                                                                           monkeypatch, capsys):
    """Room for the bundled CISI corpus's table (214 pages), not for its BM25 index (86 more):
    numpy's short write was a traceback ("61077 requested and 44016 written")."""
    cache = disk(250) / "cache"

    code, _, err = _retrieve(monkeypatch, capsys, tmp_path, str(CISI), cache)

    *said, line = err.splitlines()  # after any progress line, the error's
    start = f"error: cannot write {cache / 'bm25'}/"
    assert (code, line.startswith(start), line.endswith(FULL)) == (1, True, True), err
    assert not [s for s in said if s.startswith(("error", "Traceback"))], err
    assert [p.suffix for p in (cache / "bm25").iterdir()] == [".lock"]  # no index left


@pytest.mark.parametrize("corpus", ["kilt-w100", "kilt-wikipedia"])
def test_kilts_own_pages_need_room_for_their_download_and_the_corpus(corpus, hub, disk, tmp_path,
                                                                     monkeypatch, capsys):
    """KILT's pages (34.76 GiB) are downloaded into the same cache as the corpus cut from
    them: a disk with room for one of the two failed after the hours-long download."""
    monkeypatch.delenv("LABELER_KILT_SOURCE", raising=False)  # KILT's own URL
    cache = disk(40 * 2**30 // 4096) / "cache"  # 40 GiB, of which nothing is used

    code, _, err = _retrieve(monkeypatch, capsys, tmp_path, corpus, cache)

    assert (code, err.splitlines()[-1]) == (1, (
        f"error: cannot write {cache / 'corpora'}: storing corpus '{corpus}' needs about "
        f"69.5 GiB and the disk has 40.0 GiB free {ROOM}"))  # after kilt-w100's first-use notice
    assert not (cache / "downloads").exists() or list((cache / "downloads").iterdir()) == []
