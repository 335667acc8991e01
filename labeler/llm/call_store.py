"""The call cache's storage: a cache folder's SQLite file of answers and hit/miss counters.

The answers live in a `CallStore`: the SQLite file in the cache folder. SQLite's WAL does not
work over a network filesystem, so a worker on another node never opens that file: its
executor makes `serve_calls_from` hand every CachedBackend of the worker's process a store
that asks and commits through the driver, which alone writes the file on its own disk.

The schema evolves by numbered migrations (simonw/llm's pattern): each function in MIGRATIONS
runs once per database, in order, and is recorded in its `_migrations` table. A `generate`
answer is stored as `[{"text": ..., "capped": ...}, ...]`, one object per sample.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labeler.errors import CacheError
from labeler.paths import cache_root
from labeler.progress import warning

FILE = "calls.sqlite"
#: the caches whose damaged answers this process has said (once a run)
_DAMAGE_SAID: set[Path] = set()

#: database changes in the order they apply; never edit or reorder one, append a new one
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = []


def _migration(function: Callable[[sqlite3.Connection], None]):
    MIGRATIONS.append(function)
    return function


@_migration
def m001_calls_and_counters(db: sqlite3.Connection) -> None:
    """The answers and the hit/miss counters; IF NOT EXISTS: databases made before migrations
    have both tables already."""
    db.execute("""CREATE TABLE IF NOT EXISTS calls (
        key TEXT PRIMARY KEY,    -- sha256 of the request's JSON
        op TEXT NOT NULL,        -- generate | loglikelihood | choice_probs
        model TEXT NOT NULL,     -- the backend's alias, for listings
        value TEXT NOT NULL,     -- the answer as JSON
        created REAL NOT NULL    -- unix time
    )""")
    db.execute("CREATE TABLE IF NOT EXISTS counters "
               "(name TEXT PRIMARY KEY, value INTEGER NOT NULL)")


@_migration
def m002_generate_says_whether_capped(db: sqlite3.Connection) -> None:
    """`generate` answers stored as bare strings (before completions said whether they stopped
    at max_tokens) are dropped: the text alone cannot tell, so they are asked again once."""
    old = [key for key, value in db.execute("SELECT key, value FROM calls WHERE op = 'generate'")
           if not all(isinstance(sample, dict) for sample in json.loads(value))]
    db.executemany("DELETE FROM calls WHERE key = ?", [(key,) for key in old])


@_migration
def m003_value_checksums(db: sqlite3.Connection) -> None:
    """Each answer's checksum (`value_checksum`), so that an answer damaged or edited in place
    is asked again instead of served; the answers already stored get theirs now, once."""
    db.execute("ALTER TABLE calls ADD COLUMN checksum TEXT")
    db.create_function("value_checksum", 1, value_checksum, deterministic=True)
    db.execute("UPDATE calls SET checksum = value_checksum(value)")


def value_checksum(value: str) -> str:
    """The checksum stored beside an answer's JSON: 64 bits of its blake2b."""
    return hashlib.blake2b(value.encode(), digest_size=8).hexdigest()


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations this database has not had, in order, each recorded in `_migrations`
    (number, name, applied time) in the same transaction; the names of those applied now.

    Safe when several processes open one database at once: the check and the migrations run
    under SQLite's write lock (BEGIN IMMEDIATE), so each migration applies exactly once.
    """
    db.execute("CREATE TABLE IF NOT EXISTS _migrations ("
               "number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)")
    if _applied(db) >= set(range(1, len(MIGRATIONS) + 1)):
        return []
    done = []
    with db:
        db.execute("BEGIN IMMEDIATE")
        applied = _applied(db)  # again, under the lock: another process may have migrated
        for number, function in enumerate(MIGRATIONS, start=1):
            if number not in applied:
                function(db)
                db.execute("INSERT INTO _migrations VALUES (?, ?, ?)",
                           (number, function.__name__, time.time()))
                done.append(function.__name__)
    return done


def _applied(db: sqlite3.Connection) -> set[int]:
    return {number for (number,) in db.execute("SELECT number FROM _migrations")}


class CallStore:
    """The answers of a cache folder's SQLite file and its hit/miss counters."""

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        self.path = cache_root(cache_dir) / FILE
        self.db = _connect(self.path)
        self._lock = threading.Lock()  # items labelled at once share the connection

    def lookup(self, keys: list[str]) -> dict[str, Any]:
        """The stored answer of each of `keys` that has one; one that does not parse or whose
        checksum does not match is a miss (asked again and replaced), said once a run."""
        found, damaged = {}, 0
        with self._lock, _database(self.path):
            for start in range(0, len(keys), 500):
                part = keys[start:start + 500]
                rows = self.db.execute(
                    "SELECT key, value, checksum FROM calls "
                    f"WHERE key IN ({','.join('?' * len(part))})", part)
                for key, text, checksum in rows:
                    try:
                        if not isinstance(text, str) or checksum != value_checksum(text):
                            raise ValueError(checksum)
                        found[key] = json.loads(text)
                    except ValueError:  # json.JSONDecodeError included
                        damaged += 1
        if damaged and self.path not in _DAMAGE_SAID:
            _DAMAGE_SAID.add(self.path)
            warning(f"the call cache {self.path} holds {damaged} damaged answers (not JSON, or "
                    "not matching their checksum): they are asked again")
        return found

    def commit(self, op: str, model: str, answers: list[tuple[str, Any]]) -> None:
        """Store `answers` ((key, value) computed by `model` for `op`) and count them as
        misses, in one transaction."""
        now = time.time()
        texts = [(k, json.dumps(v)) for k, v in answers]
        with self._lock, _database(self.path), self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO calls (key, op, model, value, created, checksum) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(k, op, model, t, now, value_checksum(t)) for k, t in texts])
            _add(self.db, "misses", len(answers))

    def count_hits(self, hits: int) -> None:
        if hits:
            with self._lock, _database(self.path), self.db:
                _add(self.db, "hits", hits)


#: the store every CachedBackend of this process uses instead of its cache folder's file
_SERVED: list[CallStore] = []


def serve_calls_from(store: CallStore) -> None:
    """Keep this process's calls in `store` (anything with CallStore's methods), whatever
    cache folder a CachedBackend names: a worker on another node asks the driver's cache."""
    _SERVED[:] = [store]


def call_store(cache_dir: str | Path | None = None) -> CallStore:
    """Where this process keeps its calls: the store served to it, else `cache_dir`'s file."""
    return _SERVED[0] if _SERVED else CallStore(cache_dir)


@dataclass
class CacheStats:
    """What `labeler cache stats` shows."""

    path: Path  # the SQLite file
    entries: int  # cached answers
    size_bytes: int  # on disk, WAL included
    hits: int  # requests answered from the cache, all runs together
    misses: int  # requests computed by a backend, all runs together
    by_model: list[tuple[str, str, int]]  # (model alias, op, entries)

    @property
    def hit_rate(self) -> float | None:
        total = self.hits + self.misses
        return self.hits / total if total else None


def cache_stats(cache_dir: str | Path | None = None) -> CacheStats:
    """Entries, size and the lifetime hit rate of the call cache under `cache_dir`."""
    path = cache_root(cache_dir) / FILE
    if not path.exists():
        return CacheStats(path, 0, 0, 0, 0, [])
    db = _connect(path, read_only=True)  # a read-only cache can be listed
    entries, counters, by_model = 0, {}, []  # a file whose writer has not made the tables yet
    try:
        with _database(path):
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'calls'").fetchone():
                entries = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
                counters = dict(db.execute("SELECT name, value FROM counters"))
                by_model = db.execute("SELECT model, op, COUNT(*) FROM calls "
                                      "GROUP BY model, op ORDER BY model, op").fetchall()
    finally:
        db.close()
    size = sum(p.stat().st_size for p in path.parent.glob(FILE + "*"))
    return CacheStats(path, entries, size, counters.get("hits", 0), counters.get("misses", 0),
                      [tuple(row) for row in by_model])


def _connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """The cache's database, migrated; `read_only`: opened for reading only, as it is (no
    journal mode set, no migration), so that a cache on a read-only disk can be read: where
    its folder cannot be written, SQLite cannot make the -shm file a WAL database is read
    with, and nothing can change it, so it is opened as immutable."""
    with _database(path):
        if read_only:
            frozen = not os.access(path.parent, os.W_OK)
            return sqlite3.connect(f"{path.resolve().as_uri()}?"
                                   f"{'immutable=1' if frozen else 'mode=ro'}", uri=True,
                                   timeout=60)
        # writes open a transaction, which `with db` commits; its threads take turns (a lock)
        db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL survives a killed process
            migrate(db)
        except BaseException:
            db.close()
            raise
    return db


@contextmanager
def _database(path: Path) -> Iterator[None]:
    """The sqlite3 errors of the cache at `path` as one CacheError; a corrupt file is to be
    moved aside, after which the next run starts an empty cache."""
    try:
        yield
    except sqlite3.OperationalError as error:  # locked, disk full, I/O, read-only
        if _disk_full(error, path):  # SQLite says "disk I/O error" where its -shm cannot grow
            raise CacheError(str(path), "the call cache cannot be used: No space left on device",
                             hint="free some space or pass another --cache-dir, then run the "
                                  "same command again") from error
        raise CacheError(str(path), f"the call cache cannot be used: {error}") from error
    except sqlite3.DatabaseError as error:  # not a database, or a malformed one
        raise CacheError(
            str(path), f"the call cache is corrupt: {error}",
            hint=f"move it and any -wal and -shm file beside it aside, e.g. mv {path} "
                 f"{path}.corrupt, then run again with a new, empty cache",
        ) from error


def _disk_full(error: sqlite3.OperationalError, path: Path) -> bool:
    """Whether `error` comes of the disk under the cache being full: SQLite's "full", or an
    I/O error with less than a MiB left there."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF  # the primary code of an extended one
    if code == sqlite3.SQLITE_FULL:
        return True
    try:
        return code == sqlite3.SQLITE_IOERR and shutil.disk_usage(path.parent).free < 2**20
    except OSError:
        return False


def _add(db: sqlite3.Connection, name: str, amount: int) -> None:
    db.execute("INSERT INTO counters VALUES (?, ?) ON CONFLICT(name) DO UPDATE "
               "SET value = value + excluded.value", (name, amount))
