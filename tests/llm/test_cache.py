"""The persistent call cache: a repeated run makes no backend calls; a killed run resumes."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import cli
from labeler.errors import PromptTooLongError
from labeler.llm import ChoiceRequest, LoglikelihoodRequest, Sampling, call_store, chat
from labeler.llm.cache import _HOLE, CachedBackend, _hash, _hashes
from labeler.llm.call_store import MIGRATIONS, cache_stats, migrate

HERE = Path(__file__).parent
GREEDY = Sampling(max_tokens=8)


def test_a_second_identical_run_makes_zero_backend_calls(smollm, questions, tmp_path):
    prompts = [chat(q) for q in questions[:6]]
    first_run = CachedBackend(smollm)  # $LABELER_CACHE_DIR, set to a temp dir by conftest
    answers = first_run.generate(prompts, GREEDY)
    assert first_run.backend_calls == 6
    second_run = CachedBackend(smollm)  # a new run on the same cache
    assert second_run.generate(prompts, GREEDY) == answers
    assert second_run.backend_calls == 0
    assert (tmp_path / "labeler-cache" / "calls.sqlite").exists()


def test_a_calls_keys_hashed_together_are_the_keys_hashed_one_by_one():
    prompts = ["plain", 'quotes " and \\ and \n', "Zürich 東京 🎉 \u2028", "", _HOLE]
    for shared in ({"op": "generate", "model": {"model_id": "m", "revision": "r"},
                    "sampling": asdict(GREEDY)},
                   {"op": "generate", "model": {"note": _HOLE}}):  # the marker itself shared
        assert _hashes(shared, "prompt", prompts) == [_hash({**shared, "prompt": p})
                                                      for p in prompts]


def test_every_operation_is_cached_under_everything_that_changes_its_answer(smollm, tmp_path):
    cached = CachedBackend(smollm, cache_dir=tmp_path)
    france = chat("What is the capital of France?")
    likelihoods = [LoglikelihoodRequest(france, " Paris"), LoglikelihoodRequest(france, " Lyon")]
    choices = [ChoiceRequest(chat("Is Paris in France? Answer yes or no."), ("yes", "no"))]
    first = cached.loglikelihood(likelihoods), cached.choice_probs(choices)
    assert first == (smollm.loglikelihood(likelihoods), smollm.choice_probs(choices))
    assert cached.backend_calls == 3
    assert (cached.loglikelihood(likelihoods), cached.choice_probs(choices)) == first
    assert cached.backend_calls == 3

    cached.choice_probs([ChoiceRequest(choices[0].prompt, ("Yes", "No"))])  # other choices
    cached.loglikelihood([LoglikelihoodRequest(chat("What is the capital of Italy?"), " Paris")])
    sampled = Sampling(temperature=1.0, max_tokens=4, seed=1)
    cached.generate([france, france], sampled)  # the same request twice: computed once
    cached.generate([france], Sampling(temperature=1.0, max_tokens=4, seed=2))  # other seed
    cached.generate([france], Sampling(temperature=1.0, max_tokens=5, seed=1))  # other length
    assert cached.backend_calls == 3 + 5


def test_an_answer_not_json_or_edited_in_place_is_asked_again_and_said_once(smollm, tmp_path,
                                                                           capsys):
    france = chat("What is the capital of France?")
    requests = [LoglikelihoodRequest(france, " Paris"), LoglikelihoodRequest(france, " Lyon")]
    first = CachedBackend(smollm, cache_dir=tmp_path).loglikelihood(requests)
    with sqlite3.connect(tmp_path / call_store.FILE) as db:
        [paris, lyon] = [k for (k,) in db.execute("SELECT key FROM calls ORDER BY key")]
        db.execute("UPDATE calls SET value = '{not json' WHERE key = ?", (paris,))
        db.execute("UPDATE calls SET value = '0.0' WHERE key = ?", (lyon,))  # a likelier answer

    again = CachedBackend(smollm, cache_dir=tmp_path)
    assert again.loglikelihood(requests) == first and again.backend_calls == 2
    assert again.loglikelihood(requests) == first and again.backend_calls == 2  # replaced
    said = capsys.readouterr().err
    assert said.count(f"warning: the call cache {tmp_path / call_store.FILE} holds 2 damaged "
                      "answers (not JSON, or not matching their checksum)") == 1


def test_cache_stats_prints_entries_size_and_hit_rate(smollm, questions, tmp_path):
    runner = CliRunner()
    empty = runner.invoke(cli, ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert empty.exit_code == 0, empty.output
    assert re.search(r"entries\s*│\s*0\b", empty.output)
    assert re.search(r"hit rate\s*│\s*-", empty.output)

    cached = CachedBackend(smollm, cache_dir=tmp_path)
    prompts = [chat(q) for q in questions[:3]]
    cached.generate(prompts[:2], GREEDY)  # 2 misses
    cached.generate(prompts, GREEDY)  # 2 hits, 1 miss
    result = runner.invoke(cli, ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    for label, value in (("entries", "3"), ("hits", "2"), ("misses", "3"), ("hit rate", "40.0%")):
        assert re.search(rf"{label}\s*│\s*{re.escape(value)}\s", result.output), label
    assert re.search(r"size on disk\s*│\s*\d+\.\d KiB", result.output)
    assert re.search(r"smollm2-135m\s*│\s*generate\s*│\s*3\b", result.output)


def test_a_killed_run_reruns_only_the_missing_calls(smollm, questions, tmp_path):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    # reuse the model the `smollm` fixture converted, so the job's time goes to generation
    (cache_dir / "models").symlink_to(Path(smollm.model.name_or_path).parent)
    sampling = Sampling(temperature=0.7, top_p=0.9, seed=13, max_tokens=8)
    job = [sys.executable, str(HERE / "cache_job.py"), str(cache_dir),
           str(HERE / "fixtures" / "nq_open_dev_40.jsonl"), json.dumps(asdict(sampling))]

    killed = subprocess.Popen(job, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    # batch size 2: every answer committed as it ends (a call streams through one batch)
    while cache_stats(cache_dir).entries < 16:
        assert killed.poll() is None, "the job ended before it could be killed"
        assert time.monotonic() < deadline, "the job made no progress"
        time.sleep(0.05)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    done = cache_stats(cache_dir).entries
    assert 16 <= done < 40

    rerun = subprocess.run(job, capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    result = json.loads(rerun.stdout.splitlines()[-1])
    assert result["backend_calls"] == 40 - done
    assert result["answers"] == [[asdict(c) for c in samples]
                                 for samples in smollm.generate([chat(q) for q in questions],
                                                                sampling)]
    stats = cache_stats(cache_dir)
    assert (stats.entries, stats.misses, stats.hits) == (40, 40, done)


def test_a_too_long_prompt_fails_before_the_cache_computes_or_counts_anything(smollm, tmp_path,
                                                                              monkeypatch):
    cached = CachedBackend(smollm, cache_dir=tmp_path)
    # each miss its own call: a late check would have computed some
    monkeypatch.setattr(type(smollm), "call_size", 1)
    short = chat("Is water wet?")
    cached.generate([short], GREEDY)
    prompts = [short, chat("Is fire hot?"), chat("word " * 9000), chat("Is ice cold?")]
    with pytest.raises(PromptTooLongError) as caught:
        cached.generate(prompts, GREEDY)
    assert caught.value.index == 2  # the caller's index, not the position among the misses
    assert (caught.value.window, caught.value.reserved) == (8192, GREEDY.max_tokens)
    assert cached.backend_calls == 1
    stats = cache_stats(tmp_path)
    assert (stats.entries, stats.hits, stats.misses) == (1, 0, 1)


# The layout of calls.sqlite before migrations existed, as the cache created it.
_OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,    -- sha256 of the request's JSON
    op TEXT NOT NULL,        -- generate | loglikelihood | choice_probs
    model TEXT NOT NULL,     -- the backend's alias, for listings
    value TEXT NOT NULL,     -- the answer as JSON
    created REAL NOT NULL    -- unix time
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def _migrations(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT number, name, applied FROM _migrations ORDER BY number").fetchall()


def test_a_fresh_cache_records_every_migration(smollm, tmp_path):
    before = time.time()
    CachedBackend(smollm, cache_dir=tmp_path)
    applied = _migrations(tmp_path / call_store.FILE)
    assert [(number, name) for number, name, _ in applied] == [
        (k, f.__name__) for k, f in enumerate(MIGRATIONS, start=1)]
    assert applied[0][1] == "m001_calls_and_counters"
    assert all(before <= when <= time.time() for _, _, when in applied)
    CachedBackend(smollm, cache_dir=tmp_path)  # re-opening applies nothing
    assert _migrations(tmp_path / call_store.FILE) == applied


def test_a_cache_made_before_migrations_is_upgraded_keeping_every_answer_it_can(tmp_path):
    path = tmp_path / call_store.FILE
    with sqlite3.connect(path) as db:
        db.executescript(_OLD_SCHEMA)
        db.executemany("INSERT INTO calls VALUES (?, ?, ?, ?, ?)",
                       [("k1", "loglikelihood", "smollm2-135m", "-1.5", 1.0),
                        ("k2", "choice_probs", "smollm2-135m", '{" yes": 0.5}', 2.0),
                        # generate answers stored as bare strings: whether they stopped at the
                        # cap is unknown, so m002 drops them; the new format stays
                        ("k3", "generate", "smollm2-135m", '["Paris", "Lyon"]', 3.0),
                        ("k4", "generate", "smollm2-135m",
                         '[{"text": "Paris", "capped": false}]', 4.0)])
        db.executemany("INSERT INTO counters VALUES (?, ?)", [("hits", 5), ("misses", 2)])
    assert cache_stats(tmp_path).entries == 4  # listing it reads it as it is
    call_store.CallStore(tmp_path)  # opening it for calls migrates
    stats = cache_stats(tmp_path)
    assert (stats.entries, stats.hits, stats.misses) == (3, 5, 2)
    assert [name for _, name, _ in _migrations(path)] == [
        "m001_calls_and_counters", "m002_generate_says_whether_capped", "m003_value_checksums"]
    with sqlite3.connect(path) as db:
        assert [k for (k,) in db.execute("SELECT key FROM calls ORDER BY key")] == [
            "k1", "k2", "k4"]
        assert db.execute("SELECT value FROM calls WHERE key = 'k1'").fetchone() == ("-1.5",)
        assert migrate(db) == []  # nothing left to apply


def test_a_cache_its_writer_has_only_just_created_is_listed_as_empty(tmp_path):
    """Between a writer's first connect (the file) and its first migration (the tables), a
    listing in another process reads an empty cache, not "no such table"."""
    sqlite3.connect(tmp_path / call_store.FILE).execute("PRAGMA journal_mode=WAL").close()
    stats = cache_stats(tmp_path)
    assert stats.entries == 0 and stats.by_model == []
    assert stats.size_bytes >= (tmp_path / call_store.FILE).stat().st_size > 0  # as on disk
    listed = CliRunner().invoke(cli, ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert listed.exit_code == 0, listed.output


def test_a_new_migration_applies_once_to_an_existing_cache(tmp_path, monkeypatch):
    path = tmp_path / call_store.FILE
    cache_stats(tmp_path)  # no file yet: creates nothing
    assert not path.exists()
    with sqlite3.connect(path) as db:
        assert migrate(db) == [f.__name__ for f in MIGRATIONS]

    def m004_calls_note(db):  # ALTER TABLE ADD COLUMN fails if it runs twice
        time.sleep(0.2)  # long enough for the other process to try at the same time
        db.execute("ALTER TABLE calls ADD COLUMN note TEXT")

    monkeypatch.setattr(call_store, "MIGRATIONS", [*MIGRATIONS, m004_calls_note])
    done, errors = [], []

    def open_cache():  # two processes opening one cache at once
        try:
            with sqlite3.connect(path, timeout=60) as db:
                done.append(migrate(db))
        except sqlite3.Error as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_cache) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(done) == [[], ["m004_calls_note"]]
    assert [(n, name) for n, name, _ in _migrations(path)] == [
        (1, "m001_calls_and_counters"), (2, "m002_generate_says_whether_capped"),
        (3, "m003_value_checksums"), (4, "m004_calls_note")]


def test_workers_in_separate_folders_served_by_the_drivers_store_ask_no_call_twice(
        smollm, questions, tmp_path, monkeypatch):
    """Two workers whose cache folders differ (two nodes) keep their calls in the driver's
    store, as the Ray executor serves it: neither opens a SQLite file of its own, the second
    asks nothing the first asked, and a rerun asks nothing."""
    driver = call_store.CallStore(tmp_path / "driver")
    monkeypatch.setattr(call_store, "_SERVED", [])
    call_store.serve_calls_from(driver)
    prompts = [chat(q) for q in questions[:3]]
    first = CachedBackend(smollm, cache_dir=tmp_path / "node-1")
    answers = first.generate(prompts[:2], GREEDY)
    second = CachedBackend(smollm, cache_dir=tmp_path / "node-2")
    assert second.generate(prompts, GREEDY)[:2] == answers
    assert (first.backend_calls, second.backend_calls) == (2, 1)
    assert CachedBackend(smollm, cache_dir=tmp_path / "node-1").generate(
        prompts, GREEDY)[:2] == answers
    stats = cache_stats(tmp_path / "driver")
    assert (stats.entries, stats.misses, stats.hits) == (3, 3, 2 + 3)
    assert not list(tmp_path.glob("node-*/calls.sqlite*"))
