"""Hostile but fair input and failing disks and caches, through `labeler` itself (main(), the
console script): one `error:` line each, exit 1, nothing left behind, and never a silently
wrong number.

Full and read-only disks are real: a tmpfs mounted for the test (`disk`, tests/conftest.py).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest
from support.console import run_main as _main

from labeler.llm.call_store import FILE, cache_stats, migrate, value_checksum

FIXTURES = Path(__file__).parents[1] / "fixtures"
SCORE_FIXTURES = Path(__file__).parents[1] / "scoring" / "fixtures"
QRELS = SCORE_FIXTURES / "cisi.qrels"  # CISI human judgments (see tests/scoring/fixtures/README.md)
REFERENCE = SCORE_FIXTURES / "utility-v1" / "data-00000.jsonl"  # a real utility artifact's data
DATASET = FIXTURES / "flashrag_nq_test.jsonl"  # 17 NQ questions, FlashRAG layout
CORPUS = FIXTURES / "flashrag_corpus.jsonl"  # 40 DPR-wiki passages, FlashRAG layout
# MiniLM top-3 over nq-sample (tests/workflows/test_build.py)
RUN = FIXTURES / "nq_sample_minilm_top3.trec"
FULL = "No space left on device (free some space or write somewhere else, then run the same " \
       "command again)"


def _two_queries(tmp_path: Path) -> Path:
    """RUN cut to its first two queries (a build's --limit 2 refuses the third's lines)."""
    lines = RUN.read_text().splitlines(keepends=True)
    two = list(dict.fromkeys(line.split()[0] for line in lines))[:2]
    run = tmp_path / "top3-2q.trec"
    run.write_text("".join(line for line in lines if line.split()[0] in two))
    return run


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


# ---- 1. a byte-order mark and CRLF are read, never scored wrong -------------------------------

def test_a_qrels_file_with_a_bom_and_crlf_scores_right(tmp_path, monkeypatch, capsys):
    judged: dict[str, list[str]] = {}
    for line in QRELS.read_text().splitlines():
        qid, _, docid, _ = line.split()
        judged.setdefault(qid, []).append(docid)
    perfect = tmp_path / "perfect.jsonl"  # every query's judged (all relevant) documents first
    perfect.write_text("".join(json.dumps({"qid": q, "ranking": d}) + "\n"
                               for q, d in judged.items()))
    marked = tmp_path / "cisi.qrels"  # as Windows Notepad saves it
    marked.write_bytes(b"\xef\xbb\xbf" + QRELS.read_bytes().replace(b"\n", b"\r\n"))

    code, out, _ = _main(monkeypatch, capsys, "score", perfect, "--against", marked, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["counts"]["queries"] == len(judged) == 76  # no phantom "\ufeff1", none lost
    assert report["metrics"]["ndcg@5"] == report["metrics"]["ndcg@10"] == 1.0
    assert report["metrics"]["mrr@10"] == 1.0
    _, plain, _ = _main(monkeypatch, capsys, "score", perfect, "--against", QRELS, "--json")
    assert report["metrics"] == json.loads(plain)["metrics"]


# ---- 2. inputs checked before any LLM work, at their file and line ----------------------------

def _dataset(tmp_path: Path, case: str) -> tuple[list, str]:
    """(build arguments, expected error line) of one bad input."""
    lines = DATASET.read_bytes().splitlines()
    path, folder = tmp_path / "nq.jsonl", tmp_path / "folder.jsonl"
    folder.mkdir()
    blank = json.dumps({"id": "x1", "question": "who?", "golden_answers": ["Paris", "  "]})
    pretty = json.dumps([json.loads(line) for line in lines[:2]], indent=2).encode()
    data, args, line = {
        "duplicate qid": (
            b"\n".join([*lines[:2], b"", lines[0]]), ["--dataset", f"jsonl:{path}"],
            f"{path}:4 field 'id': duplicate qid 'test_0' (first on line 1)"),
        "blank gold answer": (
            b"\n".join([lines[0], blank.encode()]), ["--dataset", f"jsonl:{path}"],
            f"{path}:2 field 'golden_answers[1]': empty or blank gold answer"),
        "dataset is a folder": (
            None, ["--dataset", f"jsonl:{folder}"], f"{folder}: is a folder, expected a file"),
        "corpus is a folder": (
            None, ["--dataset", f"jsonl:{DATASET}", "--corpus", folder],
            f"{folder}: is a folder, expected a file"),
        "non-UTF-8 dataset": (
            lines[0] + b'\n{"id": "\xff"}\n', ["--dataset", f"jsonl:{path}"],
            f"{path}:2: not UTF-8: invalid start byte at byte 8"),
        "non-UTF-8 corpus": (
            b'{"id": "1", "contents": "\xe9"}\n',
            ["--dataset", f"jsonl:{DATASET}", "--corpus", path],
            f"{path}:1: not UTF-8: invalid continuation byte at byte 25"),
        "pretty-printed dataset": (
            pretty, ["--dataset", f"jsonl:{path}"],
            (f"{path}:1: a JSON array, not JSON Lines: write one JSON object per line "
             "(e.g. jq -c '.[]' FILE)")),
    }[case]
    if data is not None:
        path.write_bytes(data)
    return args, line


@pytest.mark.parametrize("case", ["duplicate qid", "blank gold answer", "dataset is a folder",
                                  "corpus is a folder", "non-UTF-8 dataset", "non-UTF-8 corpus",
                                  "pretty-printed dataset"])
def test_a_bad_dataset_or_corpus_fails_before_any_llm_work(tmp_path, monkeypatch, capsys,
                                                           no_loads, case):
    args, line = _dataset(tmp_path, case)
    out, cache = tmp_path / "out", tmp_path / "cache"
    code, _, err = _main(monkeypatch, capsys, "build", *args, "--llm", "smollm2-135m",
                         "--k", 2, "--out", out, "--cache-dir", cache)
    assert (code, err) == (1, f"error: {line}\n")
    assert not no_loads  # failed before the model was even wrapped
    assert not out.exists() and cache_stats(cache).entries == 0


@pytest.mark.parametrize("case", ["read-only", "no room for a probe", "under a file"])
def test_an_out_that_cannot_be_written_fails_before_any_llm_work(tmp_path, monkeypatch, capsys,
                                                                 no_loads, disk, case):
    if case == "read-only":
        out = disk(4, read_only=True) / "out"
        reason = "Read-only file system (write somewhere else)"
    elif case == "no room for a probe":
        out, reason = disk(4, free=0) / "out", FULL
    else:
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "out"
        reason = f"{tmp_path / 'file'} is a file, not a folder (write somewhere else)"
    before = _files(out.parent)
    code, _, err = _main(monkeypatch, capsys, "build", "--dataset", "nq-sample",
                         "--run", _two_queries(tmp_path),
                         "--llm", "smollm2-135m", "--limit", 2, "--k", 3, "--out", out,
                         "--cache-dir", tmp_path / "cache")
    assert (code, err) == (1, f"error: cannot write {out}: {reason}\n")
    assert not no_loads and cache_stats(tmp_path / "cache").entries == 0
    assert _files(out.parent) == before and not out.exists()  # the probe is gone


# ---- 3. one error line, never a traceback ------------------------------------------------------

def test_a_disk_that_fills_during_the_write_is_one_line_and_leaves_no_data(
        tmp_path, monkeypatch, capsys, loads, disk):
    out = disk(3, free=2) / "out"  # room for the 4 KiB probe and the shard plan, not the data
    code, _, err = _main(monkeypatch, capsys, "-q", "build", "--dataset", "nq-sample", "--run",
                         _two_queries(tmp_path),
                         "--llm", "smollm2-135m", "--limit", 2, "--k", 3, "--max-new-tokens", 8,
                         "--out", out, "--cache-dir", tmp_path / "cache")
    folder = re.escape(str(out / "utility" / "nq-sample" / "smollm2-135m"))
    assert code == 1
    assert re.fullmatch(rf"error: cannot write {folder}/\.v1\.[0-9a-f]{{32}}\.partial/"
                        rf"data-00000\.jsonl: {re.escape(FULL)}\n", err), err
    assert cache_stats(tmp_path / "cache").misses > 0  # after the LLM phase, kept for a rerun
    assert not (out / "utility" / "nq-sample" / "smollm2-135m" / "v1").exists()  # no version
    assert not [p for p in _files(out) if p.suffix in (".jsonl", ".tmp")]  # no data, no temp


ROOM = "(free some space, or point --cache-dir (or $LABELER_CACHE_DIR) at a disk with room, " \
       "then run the same command again)"


def test_a_cache_without_room_for_the_model_conversion_fails_before_it(tmp_path, monkeypatch,
                                                                       capsys, disk):
    """The first conversion of a GGUF model writes it dequantized (float32, 0.5 GiB for
    SmolLM2): a full disk failed after the whole conversion, naming the read-only GGUF (issue
    49); now the cache folder is named before it starts."""
    import labeler.llm

    monkeypatch.setattr(labeler.llm, "_LOADED", {})  # not the model this process loaded before
    cache = disk(1024) / "cache"  # 4 MiB: room for the call cache, not for the model
    code, _, err = _main(monkeypatch, capsys, "build", "--dataset", "nq-sample", "--run",
                         _two_queries(tmp_path), "--llm", "smollm2-135m", "--limit", 2, "--k", 3,
                         "--out", tmp_path / "out", "--cache-dir", cache)
    assert code == 1
    assert re.fullmatch(rf"error: cannot write {re.escape(str(cache / 'models'))}: converting "
                        r"SmolLM2-135M-Instruct\.Q4_1\.gguf needs about 5\d\d\.\d MiB and the disk "
                        rf"has \d\.\d MiB free {re.escape(ROOM)}\n", err), err
    assert [p for p in (cache / "models").iterdir() if p.suffix != ".lock"] == []  # no partial


def test_a_cache_without_room_for_a_corpus_fails_before_storing_it(tmp_path, monkeypatch,
                                                                   capsys, disk):
    cache = disk(16, free=6) / "cache"  # 24 KiB free, for a corpus file of 26 KB
    code, _, err = _main(monkeypatch, capsys, "retrieve", "--dataset", f"jsonl:{DATASET}",
                         "--corpus", CORPUS, "--encoder", "bm25", "--k", 3, "--out",
                         tmp_path / "run.trec", "--cache-dir", cache)
    assert (code, err) == (1, (f"error: cannot write {cache / 'corpora'}: storing corpus "
                               "flashrag_corpus.jsonl needs about 25.8 KiB and the disk has "
                               f"24.0 KiB free {ROOM}\n"))
    assert [p for p in (cache / "corpora").iterdir() if p.suffix != ".lock"] == []  # no partial


def _score_case(tmp_path: Path, case: str) -> tuple[list, str]:
    """(score arguments, expected error line) of one bad input."""
    sub = tmp_path / "sub.jsonl"
    sub.write_text('{"qid": "1", "ranking": ["28", "35"]}\n')

    def write(name: str, data: bytes) -> Path:
        (tmp_path / name).write_bytes(data)
        return tmp_path / name

    def reference() -> list:
        first = REFERENCE.read_bytes().splitlines(keepends=True)[0]
        sub.write_text(json.dumps({"qid": json.loads(first)["qid"], "ranking": ["x"]}) + "\n")
        return [sub, "--against", write("data.jsonl", first + b'{"q\xff"}\n')]

    cases = {
        "integer score beyond a float": (
            lambda: [write("big.jsonl", b'{"qid": "1", "scores": {"28": 1' + b"0" * 400 + b"}}"),
                     "--against", QRELS],
            (f"{tmp_path / 'big.jsonl'}:1 field 'scores.28': score 1{'0' * 38}… is too large "
             "for a float")),
        "deeply nested line": (
            lambda: [write("deep.jsonl", b'{"qid": "1", "ranking": ' + b"[" * 5000 + b"]" * 5000
                           + b"}"), "--against", QRELS],
            f"{tmp_path / 'deep.jsonl'}:1: invalid JSON: nested too deeply"),
        "pretty-printed JSON array": (
            lambda: [write("run.json", json.dumps([{"qid": "1", "ranking": ["28"]}],
                                                  indent=2).encode()), "--against", QRELS],
            (f"{tmp_path / 'run.json'}:1: a JSON array, not JSON Lines: write one JSON object "
             "per line (e.g. jq -c '.[]' FILE)")),
        "non-UTF-8 qrels": (
            lambda: [sub, "--against", write("bad.qrels", b"1 0 28 1\n1 0 3\xff5 1\n")],
            f"{tmp_path / 'bad.qrels'}:2: not UTF-8: invalid start byte at byte 5"),
        "non-UTF-8 reference": (
            reference, f"{tmp_path / 'data.jsonl'}:2: not UTF-8: invalid start byte at byte 3"),
        "per-query under a file": (
            lambda: [sub, "--against", QRELS, "--per-query", sub / "rows.jsonl"],
            (f"cannot write {sub / 'rows.jsonl'}: {sub} is a file, not a folder (write "
             "somewhere else)")),
    }
    args, line = cases[case]
    return args(), line


@pytest.mark.parametrize("case", ["integer score beyond a float", "deeply nested line",
                                  "pretty-printed JSON array", "non-UTF-8 qrels",
                                  "non-UTF-8 reference", "per-query under a file"])
def test_bad_score_input_is_one_line(tmp_path, monkeypatch, capsys, case):
    args, line = _score_case(tmp_path, case)
    before = _files(tmp_path)
    code, out, err = _main(monkeypatch, capsys, "score", *args)
    assert (code, out, err) == (1, "", f"error: {line}\n")
    assert _files(tmp_path) == before  # no --per-query file, no temp file


def test_a_read_only_per_query_path_is_one_line(tmp_path, monkeypatch, capsys, disk):
    rows = disk(4, read_only=True) / "rows.jsonl"
    sub = tmp_path / "sub.jsonl"
    sub.write_text('{"qid": "1", "ranking": ["28", "35"]}\n')
    code, out, err = _main(monkeypatch, capsys, "score", sub, "--against", QRELS,
                           "--per-query", rows)
    line = f"error: cannot write {rows}: Read-only file system (write somewhere else)\n"
    assert (code, out, err) == (1, "", line)


def test_validate_names_a_deeply_nested_line(tmp_path, monkeypatch, capsys):
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"qid": "1", "ranking": ["28"]}\n{"qid": "2", "ranking": '
                    + "[" * 5000 + "]" * 5000 + "}\n")
    code, out, err = _main(monkeypatch, capsys, "validate", deep, "--schema", "submission-ranking")
    assert code == 1 and err == ""
    assert out.splitlines()[0] == f"{deep}:2: invalid JSON: nested too deeply"
    assert out.splitlines()[-1] == "1 problem(s) in 1 file(s)"


@pytest.mark.parametrize("damage", [b"garbage, not SQLite", bytes(range(256)) * 16])
def test_a_corrupt_cache_database_is_one_line_in_cache_stats_and_build(
        tmp_path, monkeypatch, capsys, loads, damage):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / FILE).write_bytes(damage)
    line = (f"error: {cache / FILE}: the call cache is corrupt: file is not a database (move it "
            f"and any -wal and -shm file beside it aside, e.g. mv {cache / FILE} "
            f"{cache / FILE}.corrupt, then run again with a new, empty cache)\n")
    assert _main(monkeypatch, capsys, "cache", "stats", "--cache-dir", cache) == (1, "", line)
    out = tmp_path / "out"
    code, _, err = _main(monkeypatch, capsys, "build", "--dataset", "nq-sample",
                         "--run", _two_queries(tmp_path),
                         "--llm", "smollm2-135m", "--limit", 2, "--k", 3, "--out", out,
                         "--cache-dir", cache)
    assert (code, err) == (1, line)
    assert not out.exists()
    assert (cache / FILE).read_bytes() == damage  # left as it was, for the user to move


def _cache_of_three(folder: Path) -> Path:
    """A call cache in `folder` holding three answers, closed (no -wal or -shm file left)."""
    folder.mkdir()
    with closing(sqlite3.connect(folder / FILE)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        migrate(db)
        with db:
            db.executemany("INSERT INTO calls (key, op, model, value, created, checksum) "
                           "VALUES (?, ?, ?, ?, ?, ?)",
                           [(f"k{i}", "loglikelihood", "smollm2-135m", "-1.5", 1.0,
                             value_checksum("-1.5")) for i in range(3)])
    return folder


def test_cache_stats_reads_a_cache_on_a_read_only_disk(monkeypatch, capsys, disk):
    where = disk(64)
    cache = _cache_of_three(where / "cache")
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)

    code, out, err = _main(monkeypatch, capsys, "cache", "stats", "--cache-dir", cache)

    assert (code, err) == (0, "")
    assert re.search(r"entries\s*│\s*3\s", out), out


def test_a_full_disk_under_the_cache_says_no_space_left(monkeypatch, capsys, disk):
    where = disk(64)
    cache = _cache_of_three(where / "cache")
    (where / "filler").write_bytes(bytes(shutil.disk_usage(where).free))  # not a page left

    code, _, err = _main(monkeypatch, capsys, "cache", "stats", "--cache-dir", cache)

    said = (f"error: {cache / FILE}: the call cache cannot be used: No space left on device "
            "(free some space or pass another --cache-dir, then run the same command again)\n")
    assert (code, err) == (1, said)


# ---- 7. a ranking scored chunk by chunk scores as a whole -------------------------------------

def test_a_ranking_scored_in_chunks_matches_one_scored_whole(tmp_path, monkeypatch, capsys):
    import labeler.scoring.submissions

    judged: dict[str, list[str]] = {}
    for line in QRELS.read_text().splitlines():
        qid, _, docid, _ = line.split()
        judged.setdefault(qid, []).append(docid)
    # every other query ranks its judged documents behind two unjudged ones, in reverse; one in
    # three is missing (scored 0); ties by docid; a baseline pairs with it query by query
    run, base = tmp_path / "run.jsonl", tmp_path / "base.jsonl"
    with run.open("w") as r, base.open("w") as b:
        for i, (qid, docs) in enumerate(judged.items()):
            if i % 3 == 2:
                continue
            ranked = ["9001", "9002", *docs[::-1]] if i % 2 else docs
            r.write(json.dumps({"qid": qid, "scores": {d: float(len(ranked) - j) // 2
                                                       for j, d in enumerate(ranked)}}) + "\n")
            b.write(json.dumps({"qid": qid, "ranking": ranked[::-1]}) + "\n")
    args = ("score", run, "--against", QRELS, "--baseline", base, "--k", 3, "--json")
    rows = {}
    for chunk in (labeler.scoring.submissions.CHUNK, 7):  # one chunk, then eight of them
        monkeypatch.setattr(labeler.scoring.submissions, "CHUNK", chunk)
        rows_file = tmp_path / f"{chunk}.jsonl"
        code, out, err = _main(monkeypatch, capsys, *args, "--per-query", rows_file)
        assert code == 0, err
        rows[chunk] = (json.loads(out), rows_file.read_text())
    (whole, whole_rows), (chunked, chunked_rows) = rows.values()
    assert chunked == whole and chunked_rows == whole_rows
    assert whole["counts"]["missing"] == len(judged) // 3
    assert 0 < whole["metrics"]["ndcg@3"] < 1
