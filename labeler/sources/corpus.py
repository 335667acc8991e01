"""A passage corpus as an Arrow table: memory-mapped from disk for a big corpus, in memory for
a small one; never a Python object per passage.

A stored corpus is one folder under the cache, written once from column batches and read
back without being loaded: the Arrow file's metadata is memory-mapped and its rows are read
with `pread` (`FileReader`), the key files are memory-mapped:

- `passages.arrow`: an Arrow IPC file of columns pid, title, text (and, for a corpus cut from
  pages, `page`, `start_paragraph`, `end_paragraph`: where each passage lies in its page);
- `pid.u64` / `pid-rows.i64`: 64-bit hashes of the pids, sorted, and the rows they point at,
  so `corpus[pid]` is a binary search, not a dict of every pid;
- `text.u64` / `text-rows.i64`: the same for (title, text), so gold passages known only by
  their text map onto the corpus;
- `corpus.json`: passages, fingerprint, format and each file's size and sha256, written
  last: a folder without it is a cut write and is made again;
- `corpus.seen.json`: each file as last verified (labeler.checksums), so an open stats the
  files and hashes only one changed since: a damaged file is said and the corpus stored again.

Storing holds one batch and 16 bytes of hashes a passage; reading almost nothing a passage
(benchmarks/bench_corpus_load.py: 58 and 24 B at 1M), against ~1.1 KB as Python objects.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from itertools import islice
from pathlib import Path

import numpy as np
import pyarrow as pa

from labeler.checksums import describe, remember, said, verify
from labeler.errors import InputError, StorageError
from labeler.paths import cache_root, check_free, locked, refused
from labeler.progress import warning
from labeler.sources.corpus_store import (
    Batch,
    FileReader,
    Hasher,
    Keys,
    first_duplicate,
    mapped_array,
    mapped_file,
    pid_key,
    text_key,
)
from labeler.sources.passage import Passage

__all__ = ["COMPRESSED", "SPAN_COLUMNS", "Corpus", "NotStored", "corpus_folder", "in_batches",
           "storing", "without_storing"]

#: the columns every corpus has, in order
COLUMNS = ("pid", "title", "text")
#: optional columns of a corpus cut from pages: the page id and the first and last paragraph
#: (inclusive, KILT's counting) a passage's words come from
SPAN_COLUMNS = ("page", "start_paragraph", "end_paragraph")
#: bumped when the stored layout changes, so an older folder is written again (2: checksums)
FORMAT = 2
_META = "corpus.json"
#: the files' last verified state (labeler.checksums), and the files a stored corpus holds
_SEEN = "corpus.seen.json"
_FILES = ("passages.arrow", "pid.u64", "pid-rows.i64", "text.u64", "text-rows.i64")
#: about how many times its compressed source's bytes a corpus takes stored (gzip'd JSON lines,
#: parquet), assumed: compression keeps English text at about a third of its size
COMPRESSED = 3
#: rows hashed and written per step while a corpus is stored: a batch's Python strings (up to
#: ~3 KB a 100-word passage) are what a store holds in memory
BATCH = 8_192
#: False inside `without_storing()`: a corpus the cache lacks is neither downloaded nor stored
_STORING: ContextVar[bool] = ContextVar("storing", default=True)


class NotStored(Exception):
    """A corpus the cache does not hold, asked for inside `without_storing()`."""


@contextmanager
def without_storing() -> Iterator[None]:
    """Within: `Corpus.stored` reads a corpus the cache holds and raises NotStored for one
    it would have to download and store (a dry run)."""
    token = _STORING.set(False)
    try:
        yield
    finally:
        _STORING.reset(token)


def storing() -> bool:
    """Whether a corpus the cache does not hold may be downloaded and stored now."""
    return _STORING.get()


class Corpus:
    """Passages to retrieve from, addressable by pid (and by text, for mapping gold).

    `Corpus(passages)` holds a small corpus in memory; `Corpus.stored(key, batches)` writes a
    big one to the cache once and memory-maps it on later runs."""

    def __init__(self, passages: Iterable[Passage] = (), *, name: str | None = None,
                 revision: str | None = None, license: str = "unknown"):
        listed = list(passages)
        columns = {"pid": [p.pid for p in listed], "title": [p.title for p in listed],
                   "text": [p.text for p in listed]}
        table = pa.table({c: pa.array(columns[c], pa.string()) for c in COLUMNS})
        keys = Hasher()
        keys.add(columns)
        self._open(table, keys.pid_keys(), keys.text_keys(), keys.fingerprint())
        duplicate = first_duplicate(self._pid_keys, self._column_at("pid"))
        if duplicate is not None:
            raise InputError(f"duplicate passage id '{duplicate[1]}'", field_name="id")
        self.name, self.revision, self.license = name, revision, license

    # -- construction -------------------------------------------------------------------

    @classmethod
    def stored(cls, key: str, batches: Callable[[], Iterable[Batch]], *,
               name: str | None = None, revision: str | None = None, license: str = "unknown",
               what: str = "corpus", total: int | None = None, cache_dir=None,
               duplicate: Callable[[int, str], Exception] | None = None,
               size: Callable[[], int | None] | None = None) -> Corpus:
        """The corpus stored under `key`: read memory-mapped when the cache has it, else
        written first from `batches()` (column batches, in order) — once, under a lock that a
        concurrent run waits on. `what` names the corpus in progress lines and errors; a pid
        that occurs twice fails the write with `duplicate(row, pid)` (row: its second
        occurrence), by default an InputError naming it; `total`, the passages expected where
        known (None: not known), sizes the progress bar; `size()`, asked only when it is to be
        stored, about the bytes the stored table takes (None: not known): the disk is checked
        for that room (a killed write's leftovers gone) before the source is read."""
        folder = corpus_folder(key, cache_dir)
        corpus = cls._read(folder, what)
        if corpus is None and not storing():
            raise NotStored(what)
        if corpus is None:
            folder.parent.mkdir(parents=True, exist_ok=True)
            with locked(folder.with_name(folder.name + ".lock")):
                corpus = cls._read(folder) or cls._write(folder, batches, what, total, duplicate,
                                                         size)
        corpus.name, corpus.revision, corpus.license = name, revision, license
        return corpus

    @classmethod
    def _read(cls, folder: Path, what: str | None = None) -> Corpus | None:
        """The corpus stored in `folder`, or None where there is none, of an older format, or
        whose files differ from their recorded checksums (hashed again only when changed since
        last verified): damage is said (when `what` names the corpus) and the corpus is to be
        stored again."""
        try:
            meta = json.loads((folder / _META).read_text())
        except (OSError, ValueError):
            return None
        if meta.get("format") != FORMAT:
            return None
        problems = verify(folder, meta["files"], folder / _SEEN)
        if problems:
            if what:
                warning(f"the stored {what} is damaged ({said(problems)}): storing it again")
            return None
        corpus = cls.__new__(cls)
        path = folder / "passages.arrow"
        mapped = pa.py_buffer(mapped_file(path))
        table = pa.ipc.open_file(pa.BufferReader(mapped)).read_all()
        keys = [Keys(mapped_array(folder / f"{name}.u64", np.uint64),
                     mapped_array(folder / f"{name}-rows.i64", np.int64))
                for name in ("pid", "text")]
        corpus._open(table, *keys, meta["fingerprint"])
        corpus._reader = FileReader(table, mapped.address, path)
        return corpus

    @classmethod
    def _write(cls, folder: Path, batches: Callable[[], Iterable[Batch]], what: str,
               total: int | None, duplicate: Callable[[int, str], Exception] | None,
               size: Callable[[], int | None] | None) -> Corpus:
        from labeler.progress import info, progress_bar

        staging = folder.with_name(folder.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)  # a killed write's leftovers
        if size is not None and (needed := size()) is not None:  # those leftovers gone
            check_free(folder.parent, needed, f"storing {what}")
        staging.mkdir(parents=True)
        hasher, writer = Hasher(), None
        try:
            with progress_bar(f"storing {what}", total) as advance:
                for written, batch in enumerate(batches()):
                    table = _table(batch)
                    if writer is None:
                        writer = pa.ipc.new_file(str(staging / "passages.arrow"), table.schema)
                    if written == 1:  # a corpus of one batch is stored in a blink: no news
                        info(f"storing {what} as an on-disk table (once; later runs map it): "
                             f"{folder}")
                    writer.write_table(table, max_chunksize=BATCH)
                    hasher.add(batch)
                    advance(table.num_rows)
            if writer is None:
                raise InputError(f"no passages in {what}")
            writer.close()
            pid_keys, text_keys = hasher.pid_keys(), hasher.text_keys()
            table = pa.ipc.open_file(pa.memory_map(str(staging / "passages.arrow"))).read_all()
            repeated = first_duplicate(pid_keys, lambda row: table.column("pid")[row].as_py())
            if repeated is not None:
                raise (duplicate(*repeated) if duplicate else InputError(
                    f"duplicate passage id '{repeated[1]}' in {what}", field_name="id"))
            for name, keys in (("pid", pid_keys), ("text", text_keys)):
                keys.hashes.astype(np.uint64).tofile(staging / f"{name}.u64")
                keys.rows.astype(np.int64).tofile(staging / f"{name}-rows.i64")
            files = describe(staging / name for name in _FILES)
            (staging / _META).write_text(json.dumps(
                {"format": FORMAT, "passages": hasher.count, "fingerprint": hasher.fingerprint(),
                 "files": files}))
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
            remember(folder, files, folder / _SEEN)  # just hashed: the first read reads none
        except BaseException as error:
            if writer is not None:
                with suppress(OSError):  # a full disk may not take its footer either
                    writer.close()
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(error, OSError) and refused(error):
                raise StorageError.from_os(error, str(folder.parent)) from error
            raise
        corpus = cls._read(folder)
        assert corpus is not None
        return corpus

    def _open(self, table: pa.Table, pid_keys: Keys, text_keys: Keys, fingerprint: str):
        self.table, self._pid_keys, self._text_keys = table, pid_keys, text_keys
        self._reader: FileReader | None = None  # a stored table's: reads by pread
        self.fingerprint = fingerprint  # sha256 over every pid, title and text, in order
        self.name, self.revision, self.license = None, None, "unknown"

    # -- reading ------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.table.num_rows

    def __contains__(self, pid: object) -> bool:
        return isinstance(pid, str) and self._row(pid) is not None

    def __getitem__(self, pid: str) -> Passage:
        row = self._row(pid)
        if row is None:
            raise KeyError(pid)
        return self.passage(row)

    @property
    def passages(self) -> Sequence[Passage]:
        """Every passage in corpus order, read as asked (index, slice or iteration)."""
        return _Passages(self)

    def passage(self, row: int) -> Passage:
        """The passage at corpus position `row`."""
        return self._rows([row])[0]

    def pids(self, rows) -> list[str]:
        """The pids at corpus positions `rows` (any iterable of ints), in order."""
        return self._take(rows, ["pid"])["pid"]

    def contents(self, rows) -> list[str]:
        """The `contents` (what an encoder sees) at corpus positions `rows`, in order."""
        taken = self._take(rows, ["title", "text"])
        return [f"{title} {text}" if title else text
                for title, text in zip(taken["title"], taken["text"])]

    def field(self, name: str, rows) -> list[str]:
        """The `name` field ("title", "text" or "contents") at corpus positions `rows`."""
        return self.contents(rows) if name == "contents" else self._take(rows, [name])[name]

    def get_many(self, pids: Sequence[str]) -> list[Passage | None]:
        """The passage of each of `pids` (None: not in the corpus): every row a pid may be at
        read once, its columns together, where `self[pid]` reads a row's pid, then its
        passage."""
        rows = self._pid_keys.candidates_many([pid_key(pid) for pid in pids])
        wanted = sorted({row for found in rows for row in found})
        read = dict(zip(wanted, self._rows(wanted)))
        return [next((read[r] for r in found if read[r].pid == pid), None)
                for pid, found in zip(pids, rows)]

    def known(self, pids: Sequence[str]) -> list[bool]:
        """Whether each of `pids` is in the corpus: the rows they may be at read together (their
        pids only), where `pid in self` reads each row apart."""
        rows = self._pid_keys.candidates_many([pid_key(pid) for pid in pids])
        wanted = sorted({row for found in rows for row in found})
        read = dict(zip(wanted, self.pids(wanted)))
        return [any(read[r] == pid for r in found) for pid, found in zip(pids, rows)]

    def find(self, passage: Passage) -> Passage | None:
        """The corpus passage that is `passage`: the same pid, else the same title and text."""
        row = self._row(passage.pid)
        if row is None:
            key = text_key(passage.title, passage.text)
            row = next((int(r) for r in self._text_keys.candidates(key)
                        if text_key(*self._at(int(r), "title", "text")) == key), None)
        return None if row is None else self.passage(row)

    def gold_pids(self, wikipedia_id: str, first: int, last: int) -> list[str]:
        """The pids of the passages holding paragraphs `first`..`last` (inclusive) of page
        `wikipedia_id`: for a corpus cut from pages, its passages of that page whose span
        overlaps them; else the paragraph pids `<wikipedia_id>_<paragraph>` it holds."""
        if "page" not in self.table.column_names:
            return [pid for pid in (f"{wikipedia_id}_{i}" for i in range(first, last + 1))
                    if pid in self]
        row = self._row(f"{wikipedia_id}-0")  # a page's passages are consecutive rows
        found = []
        while row is not None and row < len(self):
            stop = min(row + 64, len(self))
            span = self._take(range(row, stop), ["pid", *SPAN_COLUMNS])
            for pid, page, start, end in zip(*span.values()):
                if page != wikipedia_id:
                    return found
                if start <= last and end >= first:
                    found.append(pid)
            row = stop
        return found

    def _row(self, pid: str) -> int | None:
        key = pid_key(pid)
        return next((int(r) for r in self._pid_keys.candidates(key)
                     if self._at(int(r), "pid")[0] == pid), None)

    def _at(self, row: int, *columns: str) -> tuple:
        taken = self._take(range(row, row + 1), list(columns))
        return tuple(taken[c][0] for c in columns)

    def _column_at(self, column: str) -> Callable[[int], str]:
        return lambda row: self._at(row, column)[0]

    def _take(self, rows, columns: list[str]) -> dict[str, list]:
        """Columns at corpus positions `rows` (a range, or a run of consecutive rows, is read
        as one span per chunk)."""
        spans = [rows] if isinstance(rows, range) and rows.step == 1 else _spans(rows)
        taken: dict[str, list] = {c: [] for c in columns}
        for span in spans:
            for column in columns:
                taken[column] += (self._reader.read(column, span) if self._reader else
                                  self.table.column(column).slice(span.start, len(span))
                                  .to_pylist())
        return taken

    def _rows(self, rows) -> list[Passage]:
        taken = self._take(rows, list(COLUMNS))
        return [Passage(*values) for values in zip(*taken.values())]


def _spans(rows: Iterable[int]) -> list[range]:
    """`rows` in order as ranges, each run of consecutive rows one range."""
    spans: list[range] = []
    for row in map(int, rows):
        if spans and spans[-1].stop == row:
            spans[-1] = range(spans[-1].start, row + 1)
        else:
            spans.append(range(row, row + 1))
    return spans


class _Passages(Sequence):
    """A corpus's passages as a read-only sequence, each read when asked."""

    def __init__(self, corpus: Corpus):
        self._corpus = corpus

    def __len__(self) -> int:
        return len(self._corpus)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._corpus._rows(range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._corpus.passage(index)

    def __iter__(self) -> Iterator[Passage]:
        for start in range(0, len(self), BATCH):
            yield from self._corpus._rows(range(start, min(start + BATCH, len(self))))


def in_batches(rows: Iterable[tuple], columns: Sequence[str] = COLUMNS) -> Iterator[Batch]:
    """Passages as tuples in `columns` order -> column batches of `BATCH` rows, what
    `Corpus.stored` writes."""
    rows = iter(rows)
    while chunk := list(islice(rows, BATCH)):
        yield dict(zip(columns, map(list, zip(*chunk))))


def _table(batch: Batch) -> pa.Table:
    columns = [c for c in (*COLUMNS, *SPAN_COLUMNS) if c in batch]
    types = {"pid": pa.string(), "title": pa.string(), "text": pa.string(),
             "page": pa.string(), "start_paragraph": pa.int32(), "end_paragraph": pa.int32()}
    return pa.table({c: pa.array(batch[c], types[c]) for c in columns})


def corpus_folder(key: str, cache_dir=None) -> Path:
    """Where the corpus stored under `key` lives: a folder named by the key's hash."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return cache_root(cache_dir) / "corpora" / digest
