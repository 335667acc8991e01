"""Dense retrieval with the real bundled encoder, and its sharded on-disk embedding index."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from labeler.errors import ModelLoadError
from labeler.paths import cache_root
from labeler.retrieval import build_pools
from labeler.retrieval.dense import (
    BATCH,
    MAX_LENGTH,
    corpus_index,
    load_encoder,
    search,
)
from labeler.settings import cpu_threads


def test_each_question_finds_its_gold_chunk_at_the_top(minilm, small_sample):
    run, index = search(small_sample.corpus, small_sample.queries, k=5, encoder=minilm)
    assert index == {"kind": "flat"}
    firsts = 0
    for query in small_sample.queries:
        ranked = list(run[query.qid])  # best first
        assert len(ranked) == 5
        assert query.gold[0].pid in ranked[:2], (query.question, ranked)
        firsts += ranked[0] == query.gold[0].pid
        scores = list(run[query.qid].values())
        assert scores == sorted(scores, reverse=True) and scores[0] <= 1.0 + 1e-5
    assert firsts >= 4  # "who wrote the first declaration of human rights" ranks it 2nd


def test_corpus_embeddings_are_written_in_shards_and_reused(minilm, small_sample, tmp_path,
                                                             monkeypatch, capsys):
    # 77 passages in shards of 32: 32 + 32 + 13
    index = corpus_index(minilm, small_sample.corpus, cache_dir=tmp_path, shard_size=32)
    assert index.folder == (tmp_path / "embeddings" / minilm.key
                            / f"{small_sample.corpus.fingerprint}-s32")
    assert sorted(p.name for p in index.folder.iterdir()) == [
        "index.json", "index.seen.json", "shard-00000.npy", "shard-00001.npy",
        "shard-00002.npy"]
    first = index.vectors()
    assert first.shape == (len(small_sample.corpus), 384)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert isinstance(index.shard(0), np.memmap)  # read back memory-mapped

    # a shard lost (a kill before its atomic rename): only that shard is encoded again
    index.path(1).unlink()
    encoded = []

    def embed(texts, advance=lambda n: None, **kwargs):
        encoded.append(texts)
        return real_embed(texts, advance, **kwargs)

    real_embed = minilm.embed
    monkeypatch.setattr(minilm, "embed", embed)
    again = corpus_index(minilm, small_sample.corpus, cache_dir=tmp_path, shard_size=32)
    assert encoded == [[p.contents for p in small_sample.corpus.passages[32:64]]]
    assert np.allclose(again.vectors(), first, atol=1e-6)
    encoded.clear()
    corpus_index(minilm, small_sample.corpus, cache_dir=tmp_path, shard_size=32)
    assert encoded == []  # complete: served from disk

    # a shard's bytes flipped, its size kept: said, and only that shard encoded again
    raw = bytearray(index.path(2).read_bytes())
    raw[-1536:] = bytes(b ^ 0xFF for b in raw[-1536:])  # the last vector
    index.path(2).write_bytes(bytes(raw))
    capsys.readouterr()
    again = corpus_index(minilm, small_sample.corpus, cache_dir=tmp_path, shard_size=32)
    said = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert said == [(f"warning: the embedding index {index.folder} has damaged shards "
                    "(shard-00002.npy: its bytes differ from its recorded sha256); deleting "
                    "and encoding them again")]
    assert encoded == [[p.contents for p in small_sample.corpus.passages[64:]]]
    assert np.allclose(again.vectors(), first, atol=1e-6)


def test_each_shard_holds_the_librarys_own_encode_of_its_passages_in_corpus_order(
        minilm, small_sample, tmp_path):
    index = corpus_index(minilm, small_sample.corpus, cache_dir=tmp_path, shard_size=32)
    for shard in range(index.shards):
        texts = small_sample.corpus.contents(index.span(shard))
        lengths = [len(t) for t in texts]
        assert lengths != sorted(lengths, reverse=True)  # the length sort reorders them
        theirs = minilm.embedder.encode_corpus(texts, batch_size=BATCH, max_length=MAX_LENGTH)
        np.testing.assert_allclose(index.shard(shard), theirs, atol=1e-5)
        alone = [minilm.embedder.encode_corpus([texts[i]], max_length=MAX_LENGTH)[0]
                 for i in (0, len(texts) - 1, int(np.argmax(lengths)))]
        np.testing.assert_allclose(
            index.shard(shard)[[0, len(texts) - 1, int(np.argmax(lengths))]], alone, atol=1e-5)


@pytest.mark.parametrize("omp", [None, "1"])
def test_encoding_on_the_cpu_runs_on_the_machines_threads_whatever_was_set_before(
        minilm, small_sample, monkeypatch, omp):
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)  # as Ray sets it for a one-CPU actor
    expected = int(omp) if omp else len(os.sched_getaffinity(0))
    assert cpu_threads() == expected
    seen = []
    hook = minilm.embedder.model.register_forward_pre_hook(
        lambda module, args: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    torch.set_num_threads(3)  # e.g. what the hf backend's operations set (it uses 1)
    try:
        minilm.embed(small_sample.corpus.contents(range(40)))
        assert torch.get_num_threads() == 3  # restored
    finally:
        torch.set_num_threads(before)
        hook.remove()
    assert seen == [expected, expected]  # 40 passages: 2 batches of 32


def test_search_over_shards_equals_search_over_one(minilm, small_sample, tmp_path):
    one, _ = search(small_sample.corpus, small_sample.queries, k=10, encoder=minilm,
                 cache_dir=tmp_path)
    sharded, _ = search(small_sample.corpus, small_sample.queries, k=10, encoder=minilm,
                     cache_dir=tmp_path, shard_size=7)  # 11 shards, k larger than a shard
    assert {q: list(r) for q, r in sharded.items()} == {q: list(r) for q, r in one.items()}
    for qid in one:
        assert list(sharded[qid].values()) == pytest.approx(list(one[qid].values()), abs=1e-6)


def test_a_query_ranks_the_same_whatever_else_is_searched(minilm, small_sample, tmp_path):
    # each query is encoded alone: its pool does not depend on --limit
    alone, _ = search(small_sample.corpus, small_sample.queries[:2], k=5, encoder=minilm,
                   cache_dir=tmp_path)
    together, _ = search(small_sample.corpus, small_sample.queries, k=5, encoder=minilm,
                      cache_dir=tmp_path)
    assert {q: together[q] for q in alone} == dict(alone)


def test_default_encoder_falls_back_offline_with_a_warning_and_says_which(small_sample,
                                                                         capsys):
    pools = build_pools(small_sample, pool="rp", k=3)  # BGE-M3 is not available offline
    said = " ".join(capsys.readouterr().err.split())  # rich wraps at the console width
    assert said.startswith(
        "warning: the default encoder bge-m3 cannot load (not in the local Hugging Face cache "
        "and HF_HUB_OFFLINE is set); retrieving with the bundled minilm "
        "(sentence-transformers/all-MiniLM-L6-v2) instead, as the manifest and card record")
    assert pools.encoder == {"name": "minilm", "model_id": "sentence-transformers/all-MiniLM-L6-v2",
                             "pooling": "mean", "index": {"kind": "flat"}}
    assert pools.describe()["encoder"] == pools.encoder
    assert (cache_root() / "embeddings").is_dir()  # $LABELER_CACHE_DIR from conftest
    for query in small_sample.queries:
        pool = pools[query.qid]
        assert [(c.source, c.rank) for c in pool] == [("retrieved", 1), ("retrieved", 2),
                                                      ("retrieved", 3)]
        assert any(c.gold for c in pool[:2])


def test_an_encoder_asked_for_by_name_that_cannot_load_is_an_error(small_sample, capsys):
    with pytest.raises(ModelLoadError) as caught:
        build_pools(small_sample, pool="rp", k=3, encoder="bge-m3")
    assert caught.value.line() == (
        "cannot load model 'BAAI/bge-m3': not in the local Hugging Face cache and HF_HUB_OFFLINE "
        "is set (leave --encoder unset to fall back to the bundled minilm, or pass --encoder "
        "minilm)")
    assert capsys.readouterr().err == ""  # no fallback, no warning
    with pytest.raises(ModelLoadError, match="^cannot load model 'nobody/no-such-encoder': "):
        load_encoder("nobody/no-such-encoder")
