"""The bundled MiniLM encoder, loaded once, and a small real corpus to retrieve from."""

from __future__ import annotations

import pytest

from labeler.sources.corpus import Corpus
from labeler.sources.registry import load_source


@pytest.fixture(scope="session")
def small_sample():
    """nq-sample's first 5 queries over their 5 gold chunks + every 60th other passage (~77)."""
    source = load_source("nq-sample", limit=5)
    gold = [q.gold[0] for q in source.queries]
    others = [p for p in source.corpus.passages if p not in gold][::60]
    source.corpus = Corpus(gold + others)
    return source


@pytest.fixture(scope="session")
def nq_sample_index(minilm, nq_sample_embeddings, tmp_path_factory):
    """nq-sample's whole 4,349-passage corpus by MiniLM in shards of 1,024 (5 shards), cut
    from the session's one encoding of it, and its 300 questions' vectors: (source,
    embedding index, query vectors)."""
    import numpy as np

    from labeler.retrieval.dense import corpus_index
    from labeler.retrieval.index import open_index

    source = load_source("nq-sample")
    vectors = corpus_index(minilm, source.corpus, cache_dir=nq_sample_embeddings).vectors()
    cache = tmp_path_factory.mktemp("nq-cache")
    index = open_index(minilm.key, source.corpus.fingerprint, len(source.corpus),
                       cache_dir=cache, shard_size=1024)
    index.folder.mkdir(parents=True)
    for shard in range(index.shards):
        np.save(index.path(shard), vectors[index.span(shard).start:index.span(shard).stop])
    index = corpus_index(minilm, source.corpus, cache_dir=cache, shard_size=1024)  # no encoding
    return source, index, minilm.encode_queries(source.queries)
