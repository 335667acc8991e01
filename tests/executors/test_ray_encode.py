"""Corpus encoding on the Ray executor against the real local Ray cluster (2 CPUs) and the
real bundled MiniLM: a killed Ray encoding resumes at the shards it had not written, Ray
workers encode what a local encoding does, and the driver writes it.

The corpus is nq-sample's first 300 passages in shards of 16 (19 shards: 18 of 16, one of
12), so both workers get many shards.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from support.processes import kill_when

from labeler.retrieval.dense import corpus_index
from labeler.retrieval.encoding import encode_with
from labeler.sources.corpus import Corpus
from labeler.sources.registry import load_source

PASSAGES, SHARD_SIZE = 300, 16
#: the driver the kill test stops: the same corpus encoded on the cluster at argv[2]
DRIVER = f"""
import sys
from labeler.executors.ray import RayExecutor
from labeler.retrieval.dense import corpus_index, load_encoder
from labeler.retrieval.encoding import encode_with
from labeler.sources.corpus import Corpus
from labeler.sources.registry import load_source

corpus = Corpus(load_source("nq-sample").corpus.passages[:{PASSAGES}])
corpus_index(load_encoder("minilm"), corpus, cache_dir=sys.argv[1], shard_size={SHARD_SIZE},
             encode=encode_with(RayExecutor(address=sys.argv[2], workers=2)))
"""


@pytest.fixture(scope="module")
def nq():
    """nq-sample: its first PASSAGES passages as the corpus, its first 30 questions."""
    source = load_source("nq-sample", limit=30)
    return Corpus(source.corpus.passages[:PASSAGES]), source.queries


@pytest.fixture(scope="module")
def local(minilm, nq, tmp_path_factory):
    """The corpus encoded here (the default, this process's torch threads)."""
    return corpus_index(minilm, nq[0], cache_dir=tmp_path_factory.mktemp("local"),
                        shard_size=SHARD_SIZE)


def _ray(address: str):
    from labeler.executors.ray import RayExecutor

    return RayExecutor(address=address, workers=2)


def test_a_killed_ray_encoding_resumes_on_the_workers_and_matches_a_local_one(
        tmp_path, ray_cluster, minilm, nq, local, monkeypatch):
    """SIGKILL to a Ray encoding's driver once a shard is written (its actors die with it);
    the rerun sends only the texts of the shards not on disk to the workers, the driver
    encodes none itself and writes them beside the untouched ones. Every shard then came from
    a 1-thread Ray actor: the vectors are those of this process's threads (bit-identical
    here; other BLAS kernels or core counts may change the last bits, so the test allows
    1e-6), and so is every query's exact top 10."""
    kill_when([sys.executable, "-c", DRIVER, str(tmp_path), ray_cluster],
              lambda: any(tmp_path.glob("embeddings/*/*/shard-*.npy")), "the encoding")
    written = {p: p.stat().st_mtime_ns for p in tmp_path.glob("embeddings/*/*/shard-*.npy")}
    assert 1 <= len(written) < 19

    encode, sent = encode_with(_ray(ray_cluster)), []

    def spy(index, shards, texts, encoder):  # records the spans whose texts leave the driver
        return encode(index, shards, lambda span: sent.append(span) or texts(span), encoder)

    def here(texts, advance=lambda n: None, **kwargs):
        raise AssertionError("the driver encoded a corpus shard")

    monkeypatch.setattr(minilm, "embed", here)
    index = corpus_index(minilm, nq[0], cache_dir=tmp_path, shard_size=SHARD_SIZE,
                         encode=spy)
    monkeypatch.undo()
    unwritten = [s for s in range(index.shards) if index.path(s) not in written]
    assert sorted(sent, key=lambda span: span.start) == [index.span(s) for s in unwritten]
    assert {p: p.stat().st_mtime_ns for p in written} == written  # not rewritten

    assert index.folder.name == local.folder.name
    assert sorted(p.name for p in index.folder.iterdir()) == sorted(
        p.name for p in local.folder.iterdir())  # 19 shards and index.json, no temp files
    records = [json.loads((folder / "index.json").read_text())
               for folder in (index.folder, local.folder)]
    for record in records:  # the vectors may differ in their last bits (checked below), and
        record["files"] = {name: f["bytes"] for name, f in record["files"].items()}  # sha256
    assert records[0] == records[1]
    assert np.abs(index.vectors() - local.vectors()).max() <= 1e-6
    vectors = minilm.encode_queries(nq[1])
    for (ids, scores), (local_ids, local_scores) in zip(index.search(vectors, 10),
                                                        local.search(vectors, 10)):
        assert list(ids) == list(local_ids)
        assert np.abs(scores - local_scores).max() <= 1e-6
