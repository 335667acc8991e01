"""The dense index kinds of `--index`: exact `flat`, approximate `ivf` and `hnsw` (FAISS).

`flat` (the default) is no FAISS index file: the embedding shards are the flat index
(labeler.retrieval.index), searched with FAISS's float32 `knn` and re-scored exactly. A
FAISS IndexFlatIP file would hold the same bytes again (131 GB for 32M bge-m3 passages),
and its float32 scores change in their last bits with the queries that share a BLAS block,
which would make a query's pool depend on `--limit`. The re-scored shard search keeps that
property, needs no copy, and took 0.5-1.35x IndexFlatIP's time on the same vectors in
memory (benchmarks/bench_corpus.py, 20k-1M vectors, 2 shared CPU cores).

`ivf`: IndexIVFFlat, or IndexIVFPQ with `pq=M` (M bytes a vector), its coarse quantizer
trained on an evenly spaced sample of `TRAIN_PER_LIST x nlist` vectors (x 256 codes for
PQ's codebooks, if more); the vectors are added one embedding shard at a time into a block
file each, and the blocks merged into inverted lists on disk (`OnDiskInvertedLists`, as
faiss.contrib.ondisk): building and searching hold one shard and the probed lists in
memory, and a killed build resumes at the blocks it had not written; `refine=R` asks it for
R x k candidates, of which the exact re-score keeps k (PQ's coarse ranking needs R of 4 or
more). `hnsw`: IndexHNSWFlat, built in memory (the graph and the vectors of the whole
corpus must fit while it grows), read back with its vectors memory-mapped
(IO_FLAG_MMAP_IFC).

Each is built once under the embedding folder, named by the parameters that shape the file
(`ivf-nlist128.index` + `.ivfdata`, `hnsw-M32-efc80.index`); `<name>.json`, written last
and atomically, commits it with each file's size and sha256. A file without its record, of
another size or other bytes than recorded (labeler.checksums: hashed again only
after it changed), or that FAISS cannot read is reported on stderr, deleted and rebuilt.
The top k an ANN index returns are re-scored exactly, as flat search scores them, and
recall@k against flat search is measured on up to `RECALL_QUERIES` of the queries searched
(`recall_at_k`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path

import numpy as np

from labeler.checksums import commit, damage
from labeler.errors import InputError
from labeler.paths import atomic_file
from labeler.progress import info, progress_bar, warning
from labeler.retrieval.index import QUERY_BLOCK, EmbeddingIndex, exact_scores, merge_top

__all__ = ["KINDS", "AnnIndex", "IndexSpec", "recall_at_k"]

#: kind -> its parameters and their defaults (None: chosen from the corpus size)
KINDS: dict[str, dict[str, int | None]] = {
    "flat": {},
    "ivf": {"nlist": None, "nprobe": None, "pq": None, "refine": 1},
    "hnsw": {"M": 32, "efConstruction": 80, "efSearch": 128},
}
#: the parameters that shape the built file (the others are search settings)
BUILT = ("nlist", "pq", "M", "efConstruction")
#: ivf's training sample: this many vectors per inverted list (FAISS wants at least 39)
TRAIN_PER_LIST = 40
#: queries of a search whose recall@k against flat search is measured
RECALL_QUERIES = 256


@dataclass(frozen=True)
class IndexSpec:
    """An index kind and the parameters given for it, e.g. `ivf:nlist=4096,nprobe=64`."""

    kind: str = "flat"  # flat | ivf | hnsw
    params: dict[str, int] = field(default_factory=dict)  # as given; defaults in `resolve`

    @classmethod
    def parse(cls, text: str | None) -> IndexSpec:
        """`KIND[:NAME=INT,...]`; None is flat. A bad kind, name or value is an InputError."""
        if text is None:
            return cls()
        kind, _, rest = text.strip().partition(":")
        if kind not in KINDS:
            close = get_close_matches(kind, list(KINDS), n=1)
            raise InputError(f"unknown index kind '{kind}'" +
                             (f"; did you mean '{close[0]}'?" if close else ""),
                             field_name="index", hint=_FORMAT)
        names = {name.lower(): name for name in KINDS[kind]}
        params: dict[str, int] = {}
        for item in filter(None, (part.strip() for part in rest.split(","))):
            name, equals, value = item.partition("=")
            known = names.get(name.strip().lower())
            if known is None:
                valid = ", ".join(KINDS[kind]) or "none"
                raise InputError(f"{kind} has no parameter '{name.strip()}' (its parameters: "
                                 f"{valid})", field_name="index", hint=_FORMAT)
            if not equals or not value.strip().isdigit() or int(value) < 1:
                raise InputError(f"{known} must be a positive integer, got '{value.strip()}'",
                                 field_name="index", hint=_FORMAT)
            params[known] = int(value)
        return cls(kind, params)

    def resolve(self, size: int, dim: int) -> dict[str, int | None]:
        """Every parameter of the kind for a corpus of `size` vectors of `dim`: the given
        ones checked, the others defaulted (`sized`); pq must divide `dim`."""
        values = self.sized(size)
        if self.kind == "ivf" and values["pq"] is not None and dim % values["pq"]:
            raise InputError(f"pq {values['pq']} does not divide the embedding dimension "
                             f"{dim}", field_name="index", hint="pick a divisor, e.g. "
                             f"{next(m for m in (64, 48, 32, 16, 8, 4, 2, 1) if dim % m == 0)}")
        return values

    def sized(self, size: int) -> dict[str, int | None]:
        """Every parameter of the kind for a corpus of `size` passages, checked against it
        before anything is encoded: ivf: nlist = 4 sqrt(size), at most size /
        TRAIN_PER_LIST, and never above size; nprobe = min(nlist, 64), never above nlist;
        pq = None (IVFFlat); refine = 1."""
        values = {**KINDS[self.kind], **self.params}
        if self.kind == "ivf":
            if values["nlist"] is None:
                values["nlist"] = max(1, min(round(4 * math.sqrt(size)), size // TRAIN_PER_LIST))
            if values["nlist"] > size:
                raise InputError(f"nlist {values['nlist']} exceeds the corpus's {size} passages",
                                 field_name="index", hint="lower nlist")
            if values["nprobe"] is None:
                values["nprobe"] = min(values["nlist"], 64)
            if values["nprobe"] > values["nlist"]:
                raise InputError(f"nprobe {values['nprobe']} exceeds nlist {values['nlist']}",
                                 field_name="index", hint="nprobe counts lists searched")
        return values


_FORMAT = ("use flat, ivf[:nlist=N,nprobe=N,pq=M,refine=R] or "
           "hnsw[:M=N,efConstruction=N,efSearch=N]")


@dataclass(frozen=True)
class AnnIndex:
    """One FAISS index of kind `kind` over `embeddings`, with its resolved parameters."""

    embeddings: EmbeddingIndex
    kind: str  # ivf | hnsw
    params: dict[str, int | None]  # IndexSpec.resolve

    @classmethod
    def of(cls, embeddings: EmbeddingIndex, spec: IndexSpec) -> AnnIndex:
        """The ANN index `spec` asks for over a complete embedding index."""
        if spec.kind == "flat":
            raise InputError("flat search needs no FAISS index", field_name="index")
        return cls(embeddings, spec.kind, spec.resolve(embeddings.size, embeddings.dim))

    @property
    def name(self) -> str:
        """The file stem: the kind and the parameters that shape the file."""
        short = {"efConstruction": "efc"}
        return "-".join([self.kind] + [f"{short.get(p, p)}{self.params[p]}" for p in BUILT
                                       if self.params.get(p) is not None])

    @property
    def path(self) -> Path:
        """The index file."""
        return self.embeddings.folder / f"{self.name}.index"

    @property
    def record(self) -> Path:
        """The commit record, written last: the files and their sizes."""
        return self.embeddings.folder / f"{self.name}.json"

    @property
    def seen(self) -> Path:
        """When its files were last verified against the record's checksums."""
        return self.embeddings.folder / f"{self.name}.seen.json"

    def files(self) -> list[Path]:
        """The files a complete index consists of."""
        lists = [self.path.with_suffix(".ivfdata")] if self.kind == "ivf" else []
        return [self.path, *lists]

    def open(self):
        """The index, built first unless a complete, readable one is on disk."""
        problem, index = self._check()
        if index is not None:
            return index
        if problem != "missing":
            warning(f"the {self.kind} index {self.path} is {problem}; deleting and rebuilding it")
            for path in (self.record, self.seen, *self.files()):
                path.unlink(missing_ok=True)
        if self.kind == "ivf":
            self._build_ivf()
        else:
            self._build_hnsw()
        commit(self.record, self.seen, self.files(),
               {"kind": self.kind, "params": self.params, "vectors": self.embeddings.size})
        return self.load()

    def load(self):
        """The index read back, its data memory-mapped where FAISS allows, set to search."""
        import faiss

        with _faiss_prints():
            if self.kind == "ivf":  # the lists are mmapped by OnDiskInvertedLists itself
                index = faiss.read_index(str(self.path), faiss.IO_FLAG_ONDISK_SAME_DIR)
                index.nprobe = self.params["nprobe"]
            else:
                index = faiss.read_index(str(self.path), faiss.IO_FLAG_MMAP_IFC)
                index.hnsw.efSearch = self.params["efSearch"]
        return index

    def search(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each query, (corpus positions, exact scores) of the top `k` the index
        finds, best first, equal scores by position; searched `QUERY_BLOCK` queries at a
        time, each result re-scored as flat search scores it."""
        index = self.open()
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, self.embeddings.size)
        results = []
        with progress_bar(f"searching the {self.kind} index", len(queries)) as advance:
            for start in range(0, len(queries), QUERY_BLOCK):
                block = queries[start : start + QUERY_BLOCK]
                wanted = min(self.embeddings.size, k * self.params.get("refine", 1))
                _, ids = index.search(block, wanted)
                scores = exact_scores(block, self.embeddings.rows(ids))
                scores[ids < 0] = -np.inf  # fewer than k found (ivf: small probed lists)
                ids, scores = merge_top(ids, scores, k)
                results += [(i[s > -np.inf], s[s > -np.inf]) for i, s in zip(ids, scores)]
                advance(len(block))
        return results

    def describe(self) -> dict:
        """The manifest's record: kind and every parameter."""
        return {"kind": self.kind, **self.params}

    def recall(self, queries: np.ndarray, found: list[tuple[np.ndarray, np.ndarray]],
               k: int) -> dict:
        """Recall@k of `found` (this index's results for `queries`) against exact search, on
        up to RECALL_QUERIES evenly spaced queries; said on stderr, so a user sees what the
        approximation cost. Returns the manifest's record of it."""
        sample = np.unique(np.linspace(0, len(queries) - 1, min(len(queries), RECALL_QUERIES))
                           .round().astype(np.int64))
        exact = self.embeddings.search(queries[sample], k)
        recall = recall_at_k([found[i][0] for i in sample], [ids for ids, _ in exact], k)
        settings = ", ".join(f"{p}={v}" for p, v in self.params.items() if v is not None)
        warning(f"{self.name} search ({settings}): recall@{k} against exact search "
                f"{recall:.3f} on {len(sample)} of the {len(queries)} queries")
        return {"recall_at_k": round(recall, 4), "recall_k": k, "recall_queries": len(sample)}

    def _check(self) -> tuple[str | None, object]:
        """(None, the loaded index) if it is complete and readable, else (what is wrong
        with it, None)."""
        if not self.record.is_file():
            return ("missing" if not self.path.exists() else "incomplete (no commit record)",
                    None)
        try:
            record = json.loads(self.record.read_text())
            sizes = {p.name: p.stat().st_size if p.is_file() else None for p in self.files()}
            if record.get("bytes") != sizes or record.get("vectors") != self.embeddings.size:
                return f"incomplete (files {sizes}, recorded {record.get('bytes')})", None
            if problem := damage(self.embeddings.folder, record, self.seen):
                return problem, None
            index = self.load()
        except (OSError, ValueError, RuntimeError) as error:
            return f"unreadable ({str(error).splitlines()[0][:160]})", None
        if index.ntotal != self.embeddings.size:
            return f"incomplete ({index.ntotal} vectors, not {self.embeddings.size})", None
        return None, index

    def _build_ivf(self) -> None:
        import faiss
        from faiss.contrib.ondisk import merge_ondisk

        work = self.embeddings.folder / f"{self.name}.build"
        work.mkdir(exist_ok=True)
        trained = work / "trained.index"
        if not trained.is_file():
            index = self._empty_ivf()
            wanted = TRAIN_PER_LIST * max(self.params["nlist"], 256 if self.params["pq"] else 1)
            sample = self._sample(min(self.embeddings.size, wanted))
            info(f"training {self.name} on {len(sample):,} vectors")
            index.train(sample)
            _write(index, trained)
        blocks = [work / f"block-{s:05d}.index" for s in range(self.embeddings.shards)]
        todo = [s for s, path in enumerate(blocks) if not path.is_file()]
        with progress_bar(f"adding to {self.name}", len(todo)) as advance:
            for shard in todo:  # one shard in memory at a time; each block atomic
                index = faiss.read_index(str(trained))
                span = self.embeddings.span(shard)
                index.add_with_ids(np.ascontiguousarray(self.embeddings.shard(shard)),
                                   np.arange(span.start, span.stop, dtype=np.int64))
                _write(index, blocks[shard])
                advance(1)
        info(f"merging {len(blocks)} blocks into {self.path.with_suffix('.ivfdata')}")
        lists = self.path.with_suffix(".ivfdata")
        lists.unlink(missing_ok=True)  # a merge killed part-way starts again
        index = faiss.read_index(str(trained))
        with _faiss_prints():
            merge_ondisk(index, [str(b) for b in blocks], str(lists.absolute()))
        _write(index, self.path)
        shutil.rmtree(work)

    def _empty_ivf(self):
        import faiss

        dim, nlist, pq = self.embeddings.dim, self.params["nlist"], self.params["pq"]
        quantizer = faiss.IndexFlatIP(dim)
        if pq is None:
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexIVFPQ(quantizer, dim, nlist, pq, 8, faiss.METRIC_INNER_PRODUCT)
        index.own_fields = True
        quantizer.this.disown()
        return index

    def _build_hnsw(self) -> None:
        import faiss

        index = faiss.IndexHNSWFlat(self.embeddings.dim, self.params["M"],
                                    faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.params["efConstruction"]
        with progress_bar(f"building {self.name}", self.embeddings.shards) as advance:
            for shard in range(self.embeddings.shards):
                index.add(np.ascontiguousarray(self.embeddings.shard(shard)))
                advance(1)
        _write(index, self.path)

    def _sample(self, count: int) -> np.ndarray:
        """`count` vectors at evenly spaced corpus positions."""
        positions = np.linspace(0, self.embeddings.size - 1, count).round().astype(np.int64)
        return np.ascontiguousarray(self.embeddings.rows(np.unique(positions)))


def recall_at_k(found: list[np.ndarray], exact: list[np.ndarray], k: int) -> float:
    """Mean over queries of |found top k ∩ exact top k| / |exact top k|.

    >>> recall_at_k([np.array([1, 2])], [np.array([2, 3])], 2)
    0.5
    """
    shares = [len(set(f[:k].tolist()) & set(e[:k].tolist())) / len(e[:k])
              for f, e in zip(found, exact) if len(e)]
    return float(np.mean(shares)) if shares else 1.0


def _write(index, path: Path) -> None:
    """Write a FAISS index atomically: readers never see a half-written file."""
    import faiss

    with atomic_file(path, "wb") as f:
        faiss.write_index(index, faiss.PyCallbackIOWriter(f.write))


@contextmanager
def _faiss_prints() -> Iterator[None]:
    """FAISS's C++ prints file-handling notes ("resizing", "updating ondisk filename") to
    stdout (fd 1); drop them, keeping stdout for results and --json. Its errors are
    exceptions, and its training warnings go to stderr."""
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
