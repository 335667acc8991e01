"""Corpus embeddings as an on-disk index of fixed-size shards, resumable and memory-mapped.

An index is one folder per (encoder, corpus fingerprint, shard size) under the cache:
`shard-00000.npy`, `shard-00001.npy`, ... each holding the unit-normalised float32
embeddings of `shard_size` consecutive corpus passages (the last one fewer). Each shard is
written atomically, so an encoding killed part-way resumes at the shards it had not
written; `index.json` is written last and records what the folder holds. Search reads the
shards memory-mapped, one at a time, for a block of queries at a time: memory stays
bounded by `query block x shard size` scores, whatever the corpus size.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labeler.errors import InputError
from labeler.paths import atomic_file, cache_root
from labeler.progress import progress_bar

__all__ = ["SHARD_SIZE", "EmbeddingIndex", "open_index"]

#: passages per shard: the unit of resumption (16,384 x 1,024 float32 = 64 MiB for BGE-M3)
SHARD_SIZE = 16_384
#: queries scored together against one shard
QUERY_BLOCK = 256


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

    def build(self, texts: Callable[[range], list[str]],
              embed: Callable[[list[str], Callable[[int], None]], np.ndarray]) -> list[int]:
        """Encode and write every missing shard (`texts(span)` gives its passages' texts,
        `embed(texts, advance)` their vectors); returns the shards it encoded."""
        todo = self.missing()
        with progress_bar("encoding corpus", sum(len(self.span(s)) for s in todo)) as advance:
            for shard in todo:
                vectors = np.ascontiguousarray(embed(texts(self.span(shard)), advance),
                                               dtype=np.float32)
                with atomic_file(self.path(shard), "wb") as f:
                    np.save(f, vectors)
        if todo or not (self.folder / "index.json").is_file():
            with atomic_file(self.folder / "index.json") as f:
                json.dump({"passages": self.size, "shard_size": self.shard_size,
                           "shards": self.shards, "dim": self.dim,
                           "bytes": sum(self.path(s).stat().st_size
                                        for s in range(self.shards))}, f, indent=1)
        return todo

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

    def search(self, queries: np.ndarray, k: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """For each query, in order, (corpus positions, inner-product scores) of its top
        `k`, best first, equal scores by corpus position; a query's result does not depend
        on which other queries are searched with it."""
        k = min(k, self.size)
        for start in range(0, len(queries), QUERY_BLOCK):
            block = np.asarray(queries[start : start + QUERY_BLOCK], dtype=np.float32)
            best_ids = np.empty((len(block), 0), dtype=np.int64)
            best_scores = np.empty((len(block), 0), dtype=np.float32)
            for shard in range(self.shards):
                # in float64, then float32: BLAS picks kernels by the block's shape, and only
                # the wider sum rounds to the same float32 whichever queries share the block
                scores = (block.astype(np.float64) @ np.asarray(self.shard(shard),
                                                                dtype=np.float64).T
                          ).astype(np.float32)
                take = min(k, scores.shape[1])
                top = np.argpartition(-scores, take - 1, axis=1)[:, :take]
                best_ids = np.concatenate([best_ids, top + self.span(shard).start], axis=1)
                best_scores = np.concatenate(
                    [best_scores, np.take_along_axis(scores, top, axis=1)], axis=1)
                order = np.lexsort((best_ids, -best_scores), axis=1)[:, :k]
                best_ids = np.take_along_axis(best_ids, order, axis=1)
                best_scores = np.take_along_axis(best_scores, order, axis=1)
            yield from zip(best_ids, best_scores)


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
