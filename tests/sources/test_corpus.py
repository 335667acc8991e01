"""The corpus as an on-disk Arrow table: a FlashRAG file stored once and memory-mapped after,
read back exactly as the passages it holds (by row, pid and text, with the fingerprint of the
passages in order), written again when the file changes or a store was cut; and the memory of
reading a generated corpus through the build's own path, bounded per passage."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from pathlib import Path

from labeler.sources.corpus import Corpus, Passage, corpus_folder
from labeler.sources.flashrag import split_contents
from labeler.sources.registry import load_corpus

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
_spec = importlib.util.spec_from_file_location("bench_corpus_load",
                                               ROOT / "benchmarks" / "bench_corpus_load.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _records(path: Path) -> list[Passage]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Passage(str(r["id"]), *split_contents(r["contents"])) for r in rows]


def test_a_file_corpus_reads_back_as_its_passages():
    path = FIXTURES / "flashrag_corpus.jsonl"
    expected = _records(path)
    corpus = load_corpus(path)

    assert list(corpus.passages) == expected == list(Corpus(expected).passages)
    assert corpus.passages[-1] == expected[-1] and corpus.passages[3:5] == expected[3:5]
    assert corpus.pids([7, 2]) == [expected[7].pid, expected[2].pid]
    assert corpus.contents(range(2)) == [p.contents for p in expected[:2]]
    assert all(corpus[p.pid] == p and p.pid in corpus for p in expected)
    assert "no-such-pid" not in corpus
    asked = [expected[4].pid, "no-such-pid", expected[1].pid, expected[2].pid, expected[4].pid]
    assert corpus.get_many(asked) == [expected[4], None, expected[1], expected[2], expected[4]]
    assert corpus.known(asked) == [True, False, True, True, True] == [p in corpus for p in asked]
    moved = Passage("elsewhere", expected[5].title, expected[5].text)  # same text, other id
    assert corpus.find(moved) == expected[5]
    assert corpus.find(Passage("x", "t", "no such text")) is None
    digest = hashlib.sha256()
    for p in expected:
        digest.update(f"{p.pid}\t{p.title}\t{p.text}\n".encode())
    assert corpus.fingerprint == digest.hexdigest() == Corpus(expected).fingerprint


def test_the_store_is_made_once_and_again_when_the_file_changes_or_was_cut(tmp_path):
    path = tmp_path / "corpus.jsonl"
    shutil.copy(FIXTURES / "flashrag_corpus.jsonl", path)
    first = load_corpus(path)
    folder = _folder_of(path)
    stamp = (folder / "corpus.json").stat().st_mtime_ns

    assert load_corpus(path).fingerprint == first.fingerprint
    assert (folder / "corpus.json").stat().st_mtime_ns == stamp  # mapped, not written again

    with path.open("a") as f:  # an edited file is another corpus
        f.write(json.dumps({"id": "new", "contents": '"T"\nadded'}) + "\n")
    assert len(load_corpus(path)) == len(first) + 1

    changed = _folder_of(path)
    (changed / "corpus.json").unlink()  # a store cut before its record was written
    assert len(load_corpus(path)) == len(first) + 1 and (changed / "corpus.json").exists()


def test_a_damaged_stored_corpus_is_said_and_stored_again(tmp_path, capsys):
    passages = _records(FIXTURES / "flashrag_corpus.jsonl")
    batches = lambda: [{c: [getattr(p, c) for p in passages] for c in ("pid", "title", "text")}]
    Corpus.stored("damaged", batches, cache_dir=tmp_path, what="corpus 'x'")
    arrow = corpus_folder("damaged", tmp_path) / "passages.arrow"
    data = bytearray(arrow.read_bytes())
    at = data.index(passages[0].text.encode())
    data[at:at + 5] = b"XXXXX"  # the first passage's text, flipped in place
    arrow.write_bytes(bytes(data))

    stored = Corpus.stored("damaged", batches, cache_dir=tmp_path, what="corpus 'x'")

    assert list(stored.passages) == passages  # stored again from its source
    assert capsys.readouterr().err.count(
        "the stored corpus 'x' is damaged (passages.arrow: its bytes differ from its recorded "
        "sha256): storing it again") == 1
    Corpus.stored("damaged", list, cache_dir=tmp_path)  # whole again: read, not stored
    assert "damaged" not in capsys.readouterr().err


def test_a_stored_corpus_without_any_text_reads_back(tmp_path):
    # products with titles but no description (as ESCI's often are): the text column's data
    # buffer is empty, with no address to read from
    passages = _records(FIXTURES / "flashrag_corpus.jsonl")[:3]
    corpus = Corpus.stored("no-text", lambda: [{"pid": [p.pid for p in passages],
                                                "title": [p.title for p in passages],
                                                "text": ["" for _ in passages]}],
                           cache_dir=tmp_path)
    stored = Corpus.stored("no-text", list, cache_dir=tmp_path)  # mapped from disk

    assert [(p.pid, p.title, p.text) for p in stored.passages] == [
        (p.pid, p.title, "") for p in passages] == [(p.pid, p.title, p.text)
                                                    for p in corpus.passages]


def _folder_of(path: Path) -> Path:
    stat = path.stat()
    return corpus_folder(f"flashrag-file:{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}")


def test_reading_a_big_corpus_holds_little_memory_per_passage(tmp_path):
    """Peak RSS of loading a generated FlashRAG corpus and pooling 100 queries from a run, at
    20k and 200k passages: the slope per passage, first run (stored) and second (mapped).
    Loose bounds (the Python-object corpus this replaced took 1,134 B a passage; 58 and 24 B
    measured at 1M); the
    benchmark measures the exact figures."""
    peaks = {}
    for size in (20_000, 200_000):
        folder = tmp_path / str(size)
        folder.mkdir()
        dataset, corpus, run = bench.write_data(folder, size)
        env = {"LABELER_CACHE_DIR": str(folder / "cache"), "LABELER_QUIET": "1"}
        args = [str(dataset), str(corpus), str(run)]
        peaks[size] = [bench.peak(bench.LABELER, args, env)[1] for _ in ("first", "second")]
    slopes = [(big - small) / 180_000 for small, big in zip(peaks[20_000], peaks[200_000])]
    assert slopes[0] < 300 and slopes[1] < 150, slopes
