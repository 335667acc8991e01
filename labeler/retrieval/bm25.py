"""Sparse retrieval: BM25 through bm25s (Lucene's variant, k1 = 1.2, b = 0.75, as Anserini
and Pyserini run it), English stop words dropped, no stemming.

A document that shares no term with the query scores 0 and is not retrieved, so a query's
ranking may be shorter than k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labeler.errors import InputError, MissingDependencyError
from labeler.formats import Run
from labeler.progress import info
from labeler.sources import Corpus, Query, Source

NAME = "bm25"
K1, B = 1.2, 0.75


@dataclass(frozen=True)
class BM25:
    """What ranked the pools, as `build_pools` records an encoder."""

    k1: float = K1
    b: float = B

    def describe(self) -> dict:
        """The manifest's record of the retriever."""
        return {"name": NAME, "model_id": f"bm25s lucene k1={self.k1} b={self.b}",
                "pooling": None}


def retrieve(source: Source, *, k: int = 20, encoder: str | None = None, cache_dir=None
             ) -> tuple[Run, BM25]:
    """Top-`k` BM25 over `source.corpus` for every query, and the retriever that ranked them
    (called as `dense.retrieve` is; `encoder` and `cache_dir` are dense retrieval's)."""
    if source.corpus is None or not source.corpus.passages:
        raise InputError(f"dataset '{source.name}' has no passage corpus to retrieve from",
                         field_name="corpus", hint="pass --corpus FILE or --run FILE")
    used = BM25()
    return bm25_run(source.corpus, source.queries, k=k, bm25=used), used


def bm25_run(corpus: Corpus, queries: list[Query], *, k: int, bm25: BM25 = BM25()) -> Run:
    """qid -> {pid: BM25 score} of the `k` best passages with a score above 0.

    Each passage is indexed as its `contents` (title and text)."""
    try:
        import bm25s
    except ImportError as exc:
        raise MissingDependencyError("BM25 retrieval", "bm25s") from exc
    info(f"BM25: indexing {len(corpus)} passages")
    tokens = bm25s.tokenize([p.contents for p in corpus.passages], stopwords="en",
                            show_progress=False)
    index = bm25s.BM25(k1=bm25.k1, b=bm25.b, method="lucene")
    index.index(tokens, show_progress=False)
    query_tokens = bm25s.tokenize([q.question for q in queries], stopwords="en",
                                  return_ids=False, show_progress=False)
    depth = min(k, len(corpus))
    run = Run()
    for query, words in zip(queries, query_tokens):
        known = [w for w in words if w in index.vocab_dict]
        scores = index.get_scores(known) if known else np.zeros(len(corpus), dtype=np.float32)
        top = np.argsort(-scores, kind="stable")[:depth]
        run[query.qid] = {corpus.passages[i].pid: float(scores[i]) for i in top if scores[i] > 0}
    return run
