"""`labeler retrieve`: dense top-k for a dataset, written as a TREC run, with a summary."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from labeler.formats import Run
from labeler.retrieval.pools import build_pools, gold_recall
from labeler.sources.registry import load_source
from labeler.workflows.steps import corpus_encoding

if TYPE_CHECKING:
    from labeler.executors.base import Executor


def retrieve_run(
    dataset: str,
    output: str | Path,
    *,
    corpus: str | Path | None = None,
    limit: int | None = None,
    k: int = 20,
    encoder: str | None = None,
    index: str | None = None,
    cache_dir=None,
    executor: Executor | None = None,
    bm25: dict | None = None,
) -> dict:
    """Retrieve top-`k` for every query of `dataset`, write `output` (TREC); return stats.

    Stats: dataset, revision, queries, passages, encoder {name, model_id, pooling, index
    {kind, its parameters, and for ivf/hnsw recall_at_k against exact search}}, k,
    gold_recall (share of queries whose human gold passage is in the top k; None without
    gold), seconds (retrieval wall time, corpus encoding included unless cached), output.
    `executor` encodes the corpus's missing shards (default: here); `bm25`: BM25's options
    {fields, stemmer, k1, b} with `encoder` bm25 (the encoder then records them, no index).
    """
    source = load_source(dataset, corpus=corpus, limit=limit)
    start = time.perf_counter()
    pools = build_pools(source, pool="rp", k=k, encoder=encoder, index=index,
                        cache_dir=cache_dir, encode=corpus_encoding(executor), bm25=bm25)
    seconds = time.perf_counter() - start
    run = Run({qid: {c.passage.pid: c.score for c in cands} for qid, cands in pools.items()})
    path = run.save(output, tag=f"labeler-{pools.encoder['name']}")
    return {
        "dataset": source.name,
        "revision": source.revision,
        "queries": len(source.queries),
        "passages": len(source.corpus),
        "encoder": pools.encoder,
        "k": k,
        "gold_recall": gold_recall(pools, source),
        "seconds": seconds,
        "output": str(path),
    }
