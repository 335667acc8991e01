"""Corpus embeddings as an on-disk index of fixed-size shards, resumable and memory-mapped.

An index is one folder per (encoder, corpus fingerprint, shard size) under the cache:
`shard-00000.npy`, `shard-00001.npy`, ... each holding the unit-normalised float32
embeddings of `shard_size` consecutive corpus passages (the last one fewer). Each shard is
written atomically, so an encoding killed part-way resumes at the shards it had not
written; `index.json` is written last and records what the folder holds, each shard's size
and sha256 among it, verified before the index is used (labeler.checksums). A
shard's vectors are a function of (index, shard number) alone, so the missing shards are
encoded anywhere and in any order (on Ray workers too) and this process writes each as it
comes.

The shards are the exact (`flat`) index: `search` reads each once, memory-mapped, and scores
every query against it a block at a time, so memory stays bounded by one shard and
`QUERY_BLOCK x shard size` scores whatever the corpus size, and a corpus larger than RAM is
read from disk once per search, not once per query block. A query's top k and its scores
do not depend on which other queries share its block: FAISS's float32 `knn` (BLAS) picks
candidates, and every candidate within the float32 error bound of the k-th is re-scored
with a float64 sum rounded to float32 (`exact_scores`), which no kernel choice changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labeler.checksums import HashingWriter, describe, remember, said, verify
from labeler.errors import InputError
from labeler.paths import atomic_file, cache_root
from labeler.progress import progress_bar, warning

__all__ = ["SHARD_SIZE", "EmbeddingIndex", "open_index"]

#: passages per shard: the unit of resumption (16,384 x 1,024 float32 = 64 MiB for BGE-M3)
SHARD_SIZE = 16_384
#: queries scored together against one shard
QUERY_BLOCK = 256
#: the commit record, and the files' last verified state (labeler.checksums)
RECORD, SEEN = "index.json", "index.seen.json"


@dataclass(frozen=True)
class EmbeddingIndex:
    """The shards of one corpus's embeddings under one encoder."""

    folder: Path  # holds shard-NNNNN.npy and index.json
    size: int  # passages in the corpus
    shard_size: int  # passages per shard (the last may hold fewer)

    @property
    def shards(self) -> int:
        """How many shard files the complete index has."""
        return -(-self.size // self.shard_size)

    def path(self, shard: int) -> Path:
        """The file of shard number `shard`."""
        return self.folder / f"shard-{shard:05d}.npy"

    def span(self, shard: int) -> range:
        """The corpus positions shard `shard` covers."""
        return range(shard * self.shard_size, min((shard + 1) * self.shard_size, self.size))

    def missing(self) -> list[int]:
        """The shards not yet written."""
        return [s for s in range(self.shards) if not self.path(s).is_file()]

    def build(self, encoded: Callable[[list[int]], Iterable[tuple[int, np.ndarray]]]
              ) -> list[int]:
        """Write every missing shard, each atomically as `encoded(missing)` yields its
        (shard, vectors) (a `dense.EncodeShards`, which may compute them anywhere); returns
        the shards it wrote. A shard whose bytes are not those `index.json` records (a
        damaged disk, an edit) is said in one line on stderr, deleted and encoded again."""
        recorded = self._recorded()
        damaged = {name: why for name, why in verify(self.folder, recorded, self.folder / SEEN)
                   .items() if why != "missing"} if recorded else {}
        if damaged:
            warning(f"the embedding index {self.folder} has damaged shards ({said(damaged)}); "
                    "deleting and encoding them again")
            for name in damaged:
                (self.folder / name).unlink()
        todo = self.missing()
        written = {self.path(shard).name: self.write(shard, vectors)
                   for shard, vectors in (encoded(todo) if todo else ())}
        paths = [self.path(s) for s in range(self.shards)]
        if todo or set(recorded) != {p.name for p in paths}:
            known = {name: r["sha256"] for name, r in recorded.items() if name not in damaged}
            files = describe(paths, {**known, **written})
            with atomic_file(self.folder / RECORD) as f:
                json.dump({"passages": self.size, "shard_size": self.shard_size,
                           "shards": self.shards, "dim": self.dim,
                           "bytes": sum(r["bytes"] for r in files.values()),
                           "files": files}, f, indent=1)
            remember(self.folder, files, self.folder / SEEN)
        return todo

    def _recorded(self) -> dict[str, dict]:
        """The shards `index.json` records, {name: {bytes, sha256}}; {} where it records none
        (no record yet, or one written before checksums: its shards are hashed now)."""
        try:
            files = json.loads((self.folder / RECORD).read_text()).get("files")
        except (OSError, ValueError, AttributeError):
            return {}
        return files if isinstance(files, dict) else {}

    def write(self, shard: int, vectors: np.ndarray) -> str:
        """Write shard `shard`'s vectors atomically: a kill leaves it whole or absent; returns
        the file's sha256."""
        with atomic_file(self.path(shard), "wb") as f:
            hashing = HashingWriter(f)
            np.save(hashing, np.ascontiguousarray(vectors, dtype=np.float32))
        return hashing.hexdigest()

    @property
    def dim(self) -> int:
        """The embedding dimension (read from the first shard's header)."""
        return int(self.shard(0).shape[1])

    def shard(self, shard: int) -> np.ndarray:
        """Shard `shard`'s vectors, memory-mapped read-only; a shard of the wrong shape (not
        this corpus's) is an error, never silently searched."""
        vectors = np.load(self.path(shard), mmap_mode="r")
        if vectors.ndim != 2 or vectors.shape[0] != len(self.span(shard)):
            raise InputError(f"holds {vectors.shape[:1]} vectors, expected "
                             f"{len(self.span(shard))}", str(self.path(shard)),
                             hint="delete the file: the next run re-encodes that shard")
        return vectors

    def vectors(self) -> np.ndarray:
        """Every embedding in corpus order, in memory (for small corpora and tests)."""
        return np.concatenate([self.shard(s) for s in range(self.shards)])

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The vectors at corpus `positions` (any shape; -1 gives zeros), read from the
        memory-mapped shards: shape `positions.shape + (dim,)`."""
        positions = np.asarray(positions, dtype=np.int64)
        flat = positions.reshape(-1)
        out = np.zeros((len(flat), self.dim), dtype=np.float32)
        shard_of = np.where(flat >= 0, flat // self.shard_size, -1)
        for shard in np.unique(shard_of[shard_of >= 0]):
            where = np.nonzero(shard_of == shard)[0]
            out[where] = self.shard(int(shard))[flat[where] - shard * self.shard_size]
        return out.reshape(*positions.shape, self.dim)

    def search(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each query, in order, (corpus positions, inner-product scores) of its exact
        top `k`, best first, equal scores by corpus position; a query's result does not
        depend on which other queries are searched with it."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if not len(queries):
            return []
        k = min(k, self.size)
        best_ids = np.empty((len(queries), 0), dtype=np.int64)
        best_scores = np.empty((len(queries), 0), dtype=np.float32)
        with progress_bar("searching shards", self.shards) as advance:
            for shard in range(self.shards):
                vectors, offset = self.shard(shard), self.span(shard).start
                ids, scores = [], []
                for start in range(0, len(queries), QUERY_BLOCK):
                    top_ids, top_scores = _shard_top(queries[start : start + QUERY_BLOCK],
                                                     vectors, k)
                    ids.append(top_ids + offset)
                    scores.append(top_scores)
                best_ids, best_scores = merge_top(
                    np.concatenate([best_ids, np.concatenate(ids)], axis=1),
                    np.concatenate([best_scores, np.concatenate(scores)], axis=1), k)
                advance(1)
        return list(zip(best_ids, best_scores))


def exact_scores(queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Inner products of query i with each of `rows[i]` (shape (queries, n, dim)), summed in
    float64 and rounded to float32: BLAS picks kernels by shape, and only the wider sum
    rounds to the same float32 whichever queries share a block."""
    out = np.empty(rows.shape[:2], dtype=np.float32)
    for start in range(0, len(queries), 32):  # bounds the float64 copy of the rows
        part = rows[start : start + 32].astype(np.float64)
        out[start : start + 32] = np.matmul(
            part, queries[start : start + 32, :, None].astype(np.float64))[..., 0]
    return out


def merge_top(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the `k` best (ids, scores): highest score first, equal scores by id."""
    order = np.lexsort((ids, -scores), axis=1)[:, :k]
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)


#: float32's unit roundoff, and its spacing at 1 (at least that of any score of unit vectors)
_U32 = 2.0 ** -24
_ULP32 = 2.0 ** -23
#: candidates FAISS returns past k per shard, for exact re-scoring
_SPARE = 16


def _shard_top(block: np.ndarray, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact top `k` of `block` in one shard: positions within it, exact scores.

    FAISS's float32 knn returns `k + _SPARE` candidates. A float32 dot product of length d
    is within gamma_d = d u / (1 - d u) of the exact one (|q| |x|, unit rows), so every
    passage of the exact top k (ties at the k-th score included) has a float32 score within
    2 gamma_d + one float32 spacing of the k-th float32 score; where the last candidate is
    not below that, the row is scored exactly against the whole shard instead."""
    import faiss

    dim = block.shape[1]
    take = min(len(vectors), k + _SPARE)
    approx, candidates = faiss.knn(block, vectors, take, metric=faiss.METRIC_INNER_PRODUCT)
    bound = 2 * (dim * _U32 / (1 - dim * _U32)) * np.linalg.norm(block, axis=1) + _ULP32
    kth = approx[:, min(k, take) - 1]
    whole = (take < len(vectors)) & (approx[:, -1] >= kth - bound)
    candidates = np.sort(candidates, axis=1)  # in file order: the rows are read forwards
    ids, scores = merge_top(candidates, exact_scores(block, vectors[candidates]), k)
    for row in np.nonzero(whole)[0]:  # rare: near-ties past the spare candidates
        every = exact_scores(block[row : row + 1], np.asarray(vectors)[None])
        top_ids, top_scores = merge_top(np.arange(len(vectors))[None], every, k)
        ids[row], scores[row] = top_ids[0], top_scores[0]
    return ids, scores


def open_index(folder_key: str, fingerprint: str, size: int, *, cache_dir=None,
               shard_size: int = SHARD_SIZE) -> EmbeddingIndex:
    """The index of a corpus (`fingerprint`, `size` passages) under the encoder whose cache
    key is `folder_key`; nothing is encoded until `build`."""
    if shard_size < 1:
        raise InputError(f"shard size must be at least 1, got {shard_size}",
                         field_name="shard_size")
    folder = (cache_root(cache_dir) / "embeddings" / folder_key
              / f"{fingerprint}-s{shard_size}")
    return EmbeddingIndex(folder, size, shard_size)
