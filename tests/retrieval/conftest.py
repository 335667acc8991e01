"""Real subsets of nq-sample to retrieve from with the session's MiniLM."""

from __future__ import annotations

import pytest
from support.corpora import nq_subset

#: nq_sample_index's passages and shard size: 5 shards, and every passage in an ivf:nlist=32's
#: training sample (40 a list)
ANN_PASSAGES, ANN_SHARD = 1280, 256


@pytest.fixture(scope="session")
def small_sample():
    """nq-sample's first 5 queries over their 5 gold chunks + every 60th other passage (78)."""
    return nq_subset(5)


@pytest.fixture(scope="session")
def nq_sample_index(minilm, tmp_path_factory):
    """nq-sample's 300 questions over 1,280 of its passages (their gold chunks and others
    evenly spaced) by MiniLM in 5 shards of 256, and the questions' vectors: (source,
    embedding index, query vectors)."""
    from labeler.retrieval.dense import corpus_index

    source = nq_subset(None, size=ANN_PASSAGES)
    index = corpus_index(minilm, source.corpus, cache_dir=tmp_path_factory.mktemp("nq-cache"),
                         shard_size=ANN_SHARD)
    return source, index, minilm.encode_queries(source.queries)
