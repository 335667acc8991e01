"""The on-disk parts of a stored corpus: key hashes for lookups by pid or by text, the
fingerprint, memory-mapped key files, and a reader of a mapped Arrow table's rows by `pread`."""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa

#: one batch of passages as column lists: pid, title, text (and optionally the span columns)
Batch = dict[str, list]


class Keys:
    """Sorted 64-bit hashes of one key per row and the rows in that order: rows by key in
    O(log n), with the key itself compared, so a hash collision never mixes two rows."""

    def __init__(self, hashes: np.ndarray, rows: np.ndarray):
        self.hashes, self.rows = hashes, rows

    @classmethod
    def of(cls, hashes: np.ndarray) -> Keys:
        order = np.argsort(hashes, kind="stable")  # equal hashes keep row order
        return cls(hashes[order], order.astype(np.int64))

    def candidates(self, key: bytes) -> np.ndarray:
        """The rows whose key hashes as `key` does, in row order."""
        value = np.uint64(key_hash(key))
        lo = int(np.searchsorted(self.hashes, value, "left"))
        hi = int(np.searchsorted(self.hashes, value, "right"))
        return self.rows[lo:hi]

    def candidates_many(self, keys: list[bytes]) -> list[list[int]]:
        """`candidates` of each of `keys`, searched together."""
        values = np.fromiter((key_hash(key) for key in keys), np.uint64, len(keys))
        los = np.searchsorted(self.hashes, values, "left").tolist()
        his = np.searchsorted(self.hashes, values, "right").tolist()
        return [self.rows[lo:hi].tolist() for lo, hi in zip(los, his)]


def key_hash(key: bytes) -> int:
    """A key's 64-bit blake2b hash, as the key files store it."""
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


def pid_key(pid: str) -> bytes:
    """The key a passage is looked up by pid with."""
    return pid.encode()


def text_key(title: str, text: str) -> bytes:
    """The key a passage is looked up by (title, text) with."""
    return f"{title}\x00{text}".encode()


class FileReader:
    """Reads spans of a stored table's columns with `os.pread`, at the file offsets of the
    Arrow buffers the mapped table points at: the mapping's pages are never touched, so
    reading rows neither grows the process's resident memory (the kernel maps ~64 KB of
    cached file around every page touched) nor keeps what was read."""

    def __init__(self, table: pa.Table, base: int, path: Path):
        self._table, self._base = table, base
        self._file = path.open("rb")
        lengths = [len(chunk) for chunk in table.column(0).chunks]
        self._starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    def read(self, column: str, span: range) -> list:
        """The column's values at rows `span`."""
        values: list = []
        chunks = self._table.column(column).chunks
        first = int(np.searchsorted(self._starts, span.start, "right")) - 1
        for k in range(first, len(chunks)):
            lo = max(span.start, int(self._starts[k])) - int(self._starts[k])
            hi = min(span.stop, int(self._starts[k + 1])) - int(self._starts[k])
            if hi <= lo:
                break
            values += self._chunk(chunks[k], lo, hi)
        return values

    def _chunk(self, array: pa.Array, lo: int, hi: int) -> list:
        buffers = array.buffers()
        if pa.types.is_string(array.type):  # [validity, int32 offsets, utf-8 data]
            offsets = np.frombuffer(self._pread(buffers[1], 4 * (array.offset + lo),
                                                4 * (hi - lo + 1)), np.int32)
            data = self._pread(buffers[2], int(offsets[0]), int(offsets[-1] - offsets[0]))
            starts = (offsets - offsets[0]).tolist()
            return [data[a:b].decode() for a, b in pairwise(starts)]
        width = array.type.byte_width  # fixed-width numbers: [validity, values]
        raw = self._pread(buffers[1], width * (array.offset + lo), width * (hi - lo))
        return np.frombuffer(raw, array.type.to_pandas_dtype()).tolist()

    def _pread(self, buffer: pa.Buffer | None, start: int, size: int) -> bytes:
        if not size:  # a chunk of empty strings may have no data buffer (address 0)
            return b""
        return os.pread(self._file.fileno(), size, buffer.address - self._base + start)


class Hasher:
    """The pid and text hashes and the fingerprint of passages added in order."""

    def __init__(self):
        self._pids: list[np.ndarray] = []
        self._texts: list[np.ndarray] = []
        self._digest = hashlib.sha256()
        self.count = 0

    def add(self, batch: Batch) -> None:
        pids, titles, texts = batch["pid"], batch["title"], batch["text"]
        self._pids.append(np.fromiter((key_hash(pid_key(p)) for p in pids), np.uint64, len(pids)))
        self._texts.append(np.fromiter((key_hash(text_key(t, x)) for t, x in zip(titles, texts)),
                                       np.uint64, len(pids)))
        for p, t, x in zip(pids, titles, texts):
            self._digest.update(f"{p}\t{t}\t{x}\n".encode())
        self.count += len(pids)

    def pid_keys(self) -> Keys:
        return Keys.of(joined(self._pids))

    def text_keys(self) -> Keys:
        return Keys.of(joined(self._texts))

    def fingerprint(self) -> str:
        return self._digest.hexdigest()


def joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, np.uint64)


def first_duplicate(keys: Keys, pid_at: Callable[[int], str]) -> tuple[int, str] | None:
    """(row of its second occurrence, pid) of the repeated pid seen again first, or None."""
    same = np.flatnonzero(keys.hashes[1:] == keys.hashes[:-1])
    if not len(same):
        return None
    seconds = []
    for i in same:  # equal hashes: a repeated pid, or (rarely) a collision
        a, b = int(keys.rows[i]), int(keys.rows[i + 1])
        if pid_at(a) == pid_at(b):
            seconds.append((max(a, b), pid_at(a)))
    return min(seconds) if seconds else None


def mapped_file(path: Path) -> mmap.mmap:
    """`path` memory-mapped for random reads: a page read is that page, not the kernel's
    read-ahead around it (which made every pid looked up cost ~800 KB of resident memory)."""
    with path.open("rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    mapped.madvise(mmap.MADV_RANDOM)
    return mapped


def mapped_array(path: Path, dtype) -> np.ndarray:
    """A raw array file over `mapped_file`: read-only, no copy (empty files cannot be mapped)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype)
    return np.frombuffer(mapped_file(path), dtype)

