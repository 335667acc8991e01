"""Sparse retrieval: BM25 through bm25s (Lucene's variant, k1 = 1.2, b = 0.75 by default, as
Anserini and Pyserini run it), over one field or several, each field with its own statistics:

    score(q, d) = Σ_field boost_field · BM25_field(q, d)

as Elasticsearch's boosted `most_fields` query sums them (the rubric experiment's decision
arms rank WANDS and ESCI by `title^9.4 text^4`, its product name and description; its BM25
baseline by `title^9.3 text^4.1`). Two analysers: unstemmed
(the default) is bm25s's tokenizer, lower-cased `\\w\\w+` tokens, English stop words dropped;
stemmed is the experiment's: curly quotes folded, ASCII punctuation made spaces, lower-cased,
split on white space, each word reduced by a Snowball stemmer (PyStemmer), no stop words.

A document that shares no term with the query scores 0 and is not retrieved, so a query's
ranking may be shorter than k.

Each field's index is built once per (corpus fingerprint, field, analyser, k1, b, method,
bm25s version) into a folder under the cache, in bm25s's own layout
(`bm25s.BM25.load(folder, mmap=True)` reads it), and memory-mapped on every later run; the
boosts weigh the fields' scores at query time, so they do not change an index. It is built in
bounded memory: the corpus is tokenised `BATCH` passages at a time with one growing vocabulary
(bm25s's Tokenizer, the same tokens as `bm25s.tokenize`), each batch's (term, passage, term
frequency) postings spilled to disk; then the postings are written term range by term range,
`CHUNK` at a time, as the CSC arrays bm25s builds, with the same float32 weights. `index.json`
is written last, with each file's size and sha256; a folder without it (a cut build), whose
files differ from it (labeler.checksums) or unreadable is said on stderr and
rebuilt from the start, which costs one pass over the corpus.

A query is scored in each field as bm25s scores it (its terms' postings summed in float32),
the fields' scores weighed and summed in float64, and only the passages in its terms'
postings are ranked, by partial selection: the same top k as a full stable sort of every
score, ties by corpus position.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from array import array
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from labeler.checksums import commit, damage
from labeler.errors import InputError, MissingDependencyError, StorageError
from labeler.formats import Run
from labeler.paths import atomic_file, cache_root, locked, refused
from labeler.progress import info, progress_bar, warning
from labeler.retrieval.bm25_config import (
    BM25,
    DEFAULT,
    DEFAULT_FIELDS,
    K1,
    METHOD,
    NAME,
    STOPWORDS,
    B,
    analyze,
    tokenizer,
    vocabulary,
)
from labeler.sources.corpus import Corpus
from labeler.sources.types import Query, Source

__all__ = [
    "BM25",
    "K1",
    "NAME",
    "B",
    "SparseIndex",
    "bm25_run",
    "index_folder",
    "open_index",
    "retrieve",
    "weights",
]

#: passages tokenised at a time while building: one batch's postings spill file
BATCH = 65_536
#: postings written at a time (8 bytes each in the output, about 40 in flight)
CHUNK = 1 << 24
#: bm25s's file names (its `save` / `load` defaults)
DATA, INDICES, INDPTR = "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"
VOCAB, PARAMS, RECORD = "vocab.index.json", "params.index.json", "index.json"
#: when the files were last verified against the record's checksums
SEEN = "index.seen.json"


def retrieve(source: Source, *, k: int = 20, encoder: str | None = None, cache_dir=None,
             bm25: BM25 | None = None) -> tuple[Run, BM25]:
    """Top-`k` BM25 over `source.corpus` for every query, and the retriever that ranked them
    (called as `dense.retrieve` is, after `pools.check_pools` made sure there is a corpus;
    `encoder` is dense retrieval's); `bm25`: the settings (default: the dataset's own,
    `Source.bm25`, else one unstemmed field)."""
    used = bm25 or BM25.of(source.bm25)
    return bm25_run(source.corpus, source.queries, k=k, bm25=used, cache_dir=cache_dir), used


def bm25_run(corpus: Corpus, queries: list[Query], *, k: int, bm25: BM25 = DEFAULT,
             cache_dir=None, zeros: bool = False) -> Run:
    """qid -> {pid: BM25 score} of the `k` best passages with a score above 0, from the
    corpus's cached index of each field (built first if missing); with `zeros`, the `k` best
    as the rubric experiment's BM25 ran (`top_as_ran`: zero-score passages kept)."""
    _bm25s()
    fields = [(open_index(corpus, bm25, field=name, cache_dir=cache_dir), boost)
              for name, boost in bm25.fields]
    run = Run()
    for query, terms in zip(queries, analyze([q.question for q in queries], bm25)):
        positions, scores = top_as_ran(fields, terms, k, len(corpus)) if zeros \
            else top(fields, terms, k)
        run[query.qid] = dict(zip(corpus.pids(positions.tolist()), scores.tolist()))
    return run


def _bm25s():
    try:
        import bm25s
    except ImportError as exc:
        raise MissingDependencyError("BM25 retrieval", "bm25s") from exc
    return bm25s


def weights(tf: np.ndarray, length: np.ndarray, idf: np.ndarray, avgdl: float, bm25: BM25
            ) -> np.ndarray:
    """The float32 weight of a term in a passage (its `tf` occurrences in a passage of
    `length` tokens, the term's float32 `idf`): Lucene's BM25, with bm25s's operations in
    bm25s's order and precision (float64, rounded once to float32), so the index holds
    bit for bit the weights bm25s's own `index` computes. The one place a weight is made."""
    tf = tf.astype(np.float64)
    norm = bm25.k1 * ((1 - bm25.b) + bm25.b * length.astype(np.float64) / avgdl)
    return (idf.astype(np.float64) * (tf / (norm + tf))).astype(np.float32)


@dataclass
class SparseIndex:
    """One field's BM25 index of a corpus on disk, memory-mapped through bm25s."""

    folder: Path
    model: object  # bm25s.BM25, its score arrays memory-mapped

    def top(self, words: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """`top` of this one index, boost 1."""
        return top([(self, 1.0)], words, k)


def top(fields: list[tuple[SparseIndex, float]], terms: list[str], k: int
        ) -> tuple[np.ndarray, np.ndarray]:
    """(corpus positions, scores) of the `k` best passages for a query of `terms` (analysed,
    repeats counted as bm25s counts them) over `fields` (index, boost): Σ boost · the field's
    float32 bm25s score, summed in float64; best first, equal scores by corpus position, only
    scores above 0."""
    scored, postings = [], []
    for index, boost in fields:
        vocab = index.model.vocab_dict
        ids = [vocab[t] for t in terms if t in vocab]
        if not ids:
            continue
        scored.append((index.model.get_scores_from_ids(ids), boost))
        indptr, indices = index.model.scores["indptr"], index.model.scores["indices"]
        postings += [indices[indptr[t] : indptr[t + 1]] for t in sorted(set(ids))]
    if not scored or k < 1:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)

    def total(rows: np.ndarray) -> np.ndarray:
        return sum(boost * scores[rows].astype(np.float64) for scores, boost in scored)

    found = np.concatenate(postings)
    # a passage is in at most len(postings) postings, so the best k x len(postings) postings
    # hold at least k passages: every passage of the top k scores at least their least
    if len(found) > k * len(postings):
        values = total(found)
        cut = len(values) - k * len(postings)
        found = found[values >= np.partition(values, cut)[cut]]
    found = np.unique(found)  # in corpus order, so the stable sort breaks ties by it
    values = total(found)
    best = np.argsort(-values, kind="stable")[:k]
    best = best[values[best] > 0]
    return found[best].astype(np.int64), values[best]


def top_as_ran(fields: list[tuple[SparseIndex, float]], terms: list[str], k: int, size: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(corpus positions, scores) of the `k` best of all `size` passages as the rubric
    experiment's BM25 ranks them (cheat_at_search's `BM25Search.search`): every passage
    scored, `np.argsort(-scores)[:k]` with numpy's default sort, so zero-score passages fill
    the k and equal scores fall where that sort leaves them."""
    total = np.zeros(size, dtype=np.float64)
    for index, boost in fields:
        vocab = index.model.vocab_dict
        ids = [vocab[t] for t in terms if t in vocab]
        if ids:
            total += boost * index.model.get_scores_from_ids(ids).astype(np.float64)
    best = np.argsort(-total)[:k]
    return best.astype(np.int64), total[best]


def index_folder(corpus: Corpus, bm25: BM25 = DEFAULT, *, field: str = "contents",
                 cache_dir=None) -> Path:
    """Where the index of `corpus`'s `field` under `bm25`'s analyser, k1 and b lives in the
    cache (the boosts weigh scores at query time: they are no part of an index). The one
    field of the default settings keeps the key it had before fields and stemmers were
    options, so indexes built then are found."""
    bm25s = _bm25s()
    key = {"k1": bm25.k1, "b": bm25.b, "method": METHOD, "stopwords": STOPWORDS,
           "bm25s": bm25s.__version__}
    if field != DEFAULT_FIELDS[0][0] or bm25.stemmer is not None:
        key |= {"field": field, "stemmer": bm25.stemmer,
                "stopwords": None if bm25.stemmer else STOPWORDS}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root(cache_dir) / "bm25" / f"{corpus.fingerprint}-{digest}"


def open_index(corpus: Corpus, bm25: BM25 = DEFAULT, *, field: str = "contents",
               cache_dir=None, batch: int = BATCH, chunk: int = CHUNK) -> SparseIndex:
    """The index of the corpus's `field`, built first unless a complete, readable one is
    cached (one builder at a time per index: a second process waits, then reads the
    first's)."""
    folder = index_folder(corpus, bm25, field=field, cache_dir=cache_dir)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with locked(folder.parent / f"{folder.name}.lock"):
        problem, index = _check(folder, len(corpus))
        if index is not None:
            return index
        if problem != "missing":
            warning(f"the BM25 index {folder} is {problem}; deleting and rebuilding it")
            shutil.rmtree(folder)
        info(f"BM25: indexing the {field} of {len(corpus)} passages (once: the index is "
             "cached)")
        try:
            _build(corpus, bm25, field, folder, batch=batch, chunk=chunk)
        except (OSError, StorageError) as error:  # a full disk: one line, nothing left
            shutil.rmtree(folder, ignore_errors=True)
            if isinstance(error, StorageError) or not refused(error):
                raise
            raise StorageError.from_os(error, str(folder)) from error
        problem, index = _check(folder, len(corpus))
    if index is None:
        raise InputError(f"the BM25 index just built is {problem}", str(folder),
                         hint="delete the folder and run again")
    return index


def _files(folder: Path) -> list[Path]:
    return [folder / name for name in (DATA, INDICES, INDPTR, VOCAB, PARAMS)]


def _check(folder: Path, passages: int) -> tuple[str | None, SparseIndex | None]:
    """(None, the loaded index) if the folder holds a complete, readable index of
    `passages` passages, else (what is wrong with it, None)."""
    record = folder / RECORD
    if not record.is_file():
        return ("missing" if not folder.exists() else "incomplete (no commit record)"), None
    try:
        recorded = json.loads(record.read_text())
        sizes = {p.name: p.stat().st_size if p.is_file() else None for p in _files(folder)}
        if recorded.get("bytes") != sizes or recorded.get("passages") != passages:
            return f"incomplete (files {sizes}, recorded {recorded.get('bytes')})", None
        if problem := damage(folder, recorded, folder / SEEN):
            return problem, None
        model = _bm25s().BM25.load(folder, mmap=True)
    except (OSError, ValueError) as error:
        return f"unreadable ({str(error).splitlines()[0][:160]})", None
    return None, SparseIndex(folder, model)


def _build(corpus: Corpus, bm25: BM25, field: str, folder: Path, *, batch: int, chunk: int
           ) -> None:
    """Write the index of `corpus`'s `field` into `folder`: tokenise and spill, then write
    the CSC arrays, vocabulary and parameters, and the commit record last."""
    size = len(corpus)
    spill = folder / "spill"
    spill.mkdir(parents=True)
    words = tokenizer(bm25)
    df = np.zeros(0, dtype=np.int64)
    lengths = []
    starts = range(0, size, batch)
    with progress_bar(f"BM25: tokenising {field}", size) as advance:
        for n, start in enumerate(starts):
            rows = range(start, min(start + batch, size))
            flat, counts = array("i"), np.empty(len(rows), dtype=np.int64)
            for i, ids in enumerate(words.streaming_tokenize(
                    corpus.field(field, rows), update_vocab=True, allow_empty=False)):
                flat.extend(ids)
                counts[i] = len(ids)
            passages = np.repeat(np.arange(rows.start, rows.stop, dtype=np.int64), counts)
            # term-major, passage-minor: each term's postings in corpus order
            keys, tf = np.unique((np.frombuffer(flat, dtype=np.int32).astype(np.int64) << 32)
                                 | passages, return_counts=True)
            np.save(spill / f"keys-{n:05d}.npy", keys)
            np.save(spill / f"tf-{n:05d}.npy", tf.astype(np.int32))
            vocab = len(vocabulary(words))
            df = np.concatenate([df, np.zeros(vocab - len(df), dtype=np.int64)])
            df += np.bincount(keys >> 32, minlength=vocab)
            lengths.append(counts.astype(np.int32))
            advance(len(rows))
    lengths = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int32)
    _write_postings(folder, spill, len(starts), df, lengths, bm25, chunk)
    shutil.rmtree(spill)
    vocab = dict(vocabulary(words))
    vocab[""] = len(vocab)  # bm25s's empty token, past the last column, as `index` adds it
    with atomic_file(folder / VOCAB) as f:
        json.dump(vocab, f, ensure_ascii=False)
    with atomic_file(folder / PARAMS) as f:
        json.dump({"k1": bm25.k1, "b": bm25.b, "delta": 0.5, "method": METHOD,
                   "idf_method": METHOD, "dtype": "float32", "int_dtype": "int32",
                   "num_docs": size, "version": _bm25s().__version__, "backend": "numpy"},
                  f, indent=4)
    commit(folder / RECORD, folder / SEEN, _files(folder),
           {"passages": size, "terms": len(df), "postings": int(df.sum())})


def _write_postings(folder: Path, spill: Path, batches: int, df: np.ndarray,
                    lengths: np.ndarray, bm25: BM25, chunk: int) -> None:
    """Write the CSC arrays (bm25s's `data`, `indices`, `indptr`) from the spilled
    postings, about `chunk` postings at a time: each term range's postings are gathered from
    every batch (already sorted by term, then passage), weighted, and appended."""
    from bm25s.scoring import _build_idf_array, _select_idf_scorer

    size, vocab = len(lengths), len(df)
    # the float64 mean of the lengths, as bm25s takes it (the integer sum is exact)
    avgdl = np.float64(lengths.sum(dtype=np.int64)) / size if size else np.float64(0)
    idf = _build_idf_array(dict(enumerate(df.tolist())), size, _select_idf_scorer(METHOD))
    indptr = np.zeros(vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    with atomic_file(folder / INDPTR, "wb") as f:
        np.save(f, indptr)
    bounds = [0]
    while bounds[-1] < vocab:
        reach = int(np.searchsorted(indptr, indptr[bounds[-1]] + chunk, side="right")) - 1
        bounds.append(min(vocab, max(bounds[-1] + 1, reach)))
    with atomic_file(folder / DATA, "wb") as data_file, \
            atomic_file(folder / INDICES, "wb") as indices_file, \
            progress_bar("BM25: writing postings", int(indptr[-1])) as advance:
        for out, dtype in ((data_file, np.float32), (indices_file, np.int32)):
            np.lib.format.write_array_header_1_0(out, {
                "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                "fortran_order": False, "shape": (int(indptr[-1]),)})
        for first, last in pairwise(bounds):
            offset = indptr[first]
            data = np.empty(indptr[last] - offset, dtype=np.float32)
            indices = np.empty(indptr[last] - offset, dtype=np.int32)
            heads = indptr[first:last] - offset  # where each term's next posting goes
            for n in range(batches):
                keys = np.load(spill / f"keys-{n:05d}.npy", mmap_mode="r")
                lo, hi = np.searchsorted(keys, [first << 32, last << 32])
                part = np.array(keys[lo:hi])
                tf = np.array(np.load(spill / f"tf-{n:05d}.npy", mmap_mode="r")[lo:hi])
                del keys
                terms, passages = part >> 32, part & 0xFFFFFFFF
                runs = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]]) if len(part) \
                    else np.zeros(0, dtype=np.int64)
                run_terms = terms[runs] - first
                run_sizes = np.diff(np.r_[runs, len(part)])
                places = np.repeat(heads[run_terms] - runs, run_sizes) + np.arange(len(part))
                data[places] = weights(tf, lengths[passages], idf[terms], avgdl, bm25)
                indices[places] = passages
                heads[run_terms] += run_sizes
            data.tofile(data_file)
            indices.tofile(indices_file)
            advance(len(data))
