"""FAISS indexes over the embedding shards: exact flat search, ivf and hnsw with their recall
against it on a real corpus (nq-sample's 300 questions over 1,280 of its passages under
MiniLM: retrieval/conftest.py), resumable and atomic builds, memory-mapped reads, and the
`--index` spec's errors."""

from __future__ import annotations

import json
import shutil

import faiss
import numpy as np
import pytest

from labeler import checksums
from labeler.errors import InputError
from labeler.retrieval import ann, build_pools
from labeler.retrieval import index as index_module
from labeler.retrieval.ann import AnnIndex, IndexSpec, recall_at_k
from labeler.retrieval.dense import search
from labeler.retrieval.index import EmbeddingIndex

K = 20


def _exact(index: EmbeddingIndex, queries: np.ndarray, k: int):
    """Brute force: float64 inner products of every pair, rounded to float32, best first,
    equal scores by corpus position."""
    scores = (queries.astype(np.float64) @ index.vectors().astype(np.float64).T
              ).astype(np.float32)
    positions = np.broadcast_to(np.arange(index.size), scores.shape)
    order = np.lexsort((positions, -scores), axis=1)[:, :k]
    return order, np.take_along_axis(scores, order, axis=1)


def _copy(index: EmbeddingIndex, folder) -> EmbeddingIndex:
    """The same shards in another folder, so a test builds its own FAISS files."""
    shutil.copytree(index.folder, folder)
    return EmbeddingIndex(folder, index.size, index.shard_size)


@pytest.mark.slow
def test_flat_search_is_the_exact_ranking_whatever_the_block(nq_sample_index, monkeypatch):
    _, index, queries = nq_sample_index
    ids, scores = _exact(index, queries, K)
    found = index.search(queries, K)
    assert all(np.array_equal(f, i) for (f, _), i in zip(found, ids))
    assert all(np.array_equal(s, e) for (_, s), e in zip(found, scores))  # bit for bit
    # a query alone, or in blocks of 7 (FAISS's non-BLAS path under 20 queries): the same
    monkeypatch.setattr(index_module, "QUERY_BLOCK", 7)
    for q in (0, 150, 299):
        alone_ids, alone_scores = index.search(queries[q : q + 1], K)[0]
        assert np.array_equal(alone_ids, ids[q]) and np.array_equal(alone_scores, scores[q])
    blocked = index.search(queries[:30], K)
    assert all(np.array_equal(b, i) for (b, _), i in zip(blocked, ids))


@pytest.mark.slow
def test_flat_search_reads_each_shard_once_per_search(nq_sample_index, monkeypatch):
    _, index, queries = nq_sample_index
    read = []
    real = EmbeddingIndex.shard
    monkeypatch.setattr(EmbeddingIndex, "shard", lambda self, s: read.append(s) or real(self, s))
    monkeypatch.setattr(index_module, "QUERY_BLOCK", 64)  # 300 queries: 5 blocks a shard
    index.search(queries, K)
    assert read == [0, 1, 2, 3, 4]
    assert isinstance(real(index, 0), np.memmap)


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "least"), [("ivf:nlist=32,nprobe=16", 0.93), ("hnsw", 0.99)])
def test_ann_recall_against_exact_is_high_and_reported(nq_sample_index, tmp_path, capsys,
                                                       minilm, spec, least):
    source, index, _ = nq_sample_index
    _copy(index, tmp_path / "embeddings" / minilm.key / index.folder.name)  # no re-encoding
    run, described = search(source.corpus, source.queries, k=K, encoder=minilm,
                            cache_dir=tmp_path, shard_size=index.shard_size, index=spec)
    assert described["recall_k"] == K and described["recall_queries"] == 256
    assert described["recall_at_k"] >= least, described
    kind = spec.split(":")[0]
    said = " ".join(capsys.readouterr().err.split())
    assert f"warning: {kind}-" in said
    assert f"recall@20 against exact search {described['recall_at_k']:.3f} on 256 of the 300 " \
           "queries" in said
    print(f"{spec}: recall@{K} {described['recall_at_k']:.4f}")  # shown with pytest -s
    # every passage it returns scores exactly as flat search scores it
    flat, _ = search(source.corpus, source.queries[:20], k=K, encoder=minilm,
                     cache_dir=tmp_path, shard_size=index.shard_size)
    for query in source.queries[:20]:
        for pid, score in run[query.qid].items():
            if pid in flat[query.qid]:
                assert score == flat[query.qid][pid]
        assert list(run[query.qid].values()) == sorted(run[query.qid].values(), reverse=True)


@pytest.mark.slow
def test_a_killed_ivf_build_resumes_at_the_blocks_it_had_not_written(nq_sample_index, tmp_path,
                                                                    monkeypatch):
    _, index, queries = nq_sample_index
    copy = _copy(index, tmp_path / "emb")
    ivf = AnnIndex.of(copy, IndexSpec.parse("ivf:nlist=32,nprobe=32"))
    written, real_write = [], ann._write

    def write(faiss_index, path):
        if path.name == "block-00002.index":
            raise KeyboardInterrupt  # killed after two of the five shards were added
        written.append(path.name)
        real_write(faiss_index, path)

    monkeypatch.setattr(ann, "_write", write)
    with pytest.raises(KeyboardInterrupt):
        ivf.search(queries, K)
    assert written == ["trained.index", "block-00000.index", "block-00001.index"]
    assert not ivf.path.exists() and not ivf.record.exists()  # nothing half-done is used

    written.clear()
    monkeypatch.setattr(ann, "_write", lambda i, p: written.append(p.name) or real_write(i, p))
    found = ivf.search(queries, K)
    assert written == ["block-00002.index", "block-00003.index", "block-00004.index",
                       "ivf-nlist32.index"]  # not trained again, blocks 0-1 kept
    assert not (copy.folder / "ivf-nlist32.build").exists()
    assert sorted(json.loads(ivf.record.read_text())["bytes"]) == [
        "ivf-nlist32.index", "ivf-nlist32.ivfdata"]
    # nprobe = nlist probes every list: the exact top k, but for float32 near-ties at rank k
    ids, _ = _exact(copy, queries, K)
    assert recall_at_k([f for f, _ in found], list(ids), K) >= 0.999


@pytest.mark.slow
def test_a_corrupt_or_incomplete_index_is_rejected_in_one_line_and_rebuilt(
        nq_sample_index, tmp_path, capsys):
    _, index, queries = nq_sample_index
    copy = _copy(index, tmp_path / "emb")
    hnsw = AnnIndex.of(copy, IndexSpec.parse("hnsw:M=16,efConstruction=40"))
    first = hnsw.search(queries[:10], K)
    size = hnsw.path.stat().st_size

    with hnsw.path.open("r+b") as f:  # cut short: another size than its record says
        f.truncate(size // 2)
    again = hnsw.search(queries[:10], K)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert " ".join(err.split()).startswith(
        f"warning: the hnsw index {hnsw.path} is incomplete (files {{'hnsw-M16-efc40.index': "
        f"{size // 2}}}, recorded {{'hnsw-M16-efc40.index': {size}}}); deleting and rebuilding it")
    assert hnsw.path.stat().st_size == size
    assert len(again) == len(first) == 10

    with hnsw.path.open("r+b") as f:  # same size, not a FAISS index
        f.write(b"XXXX")
    hnsw.search(queries[:1], K)
    err = " ".join(capsys.readouterr().err.split())
    assert err == (f"warning: the hnsw index {hnsw.path} is damaged (hnsw-M16-efc40.index: its "
                   "bytes differ from its recorded sha256); deleting and rebuilding it")
    hnsw.search(queries[:1], K)
    assert capsys.readouterr().err == ""  # rebuilt and committed: read as it is

    hnsw.record.unlink()  # a build killed after the file, before its record
    hnsw.search(queries[:1], K)
    assert "is incomplete (no commit record)" in capsys.readouterr().err


class _Spy:
    """A loaded FAISS index that records the size of each block of queries it is asked."""

    def __init__(self, index):
        self.index, self.blocks = index, []

    def search(self, queries, k):
        self.blocks.append(len(queries))
        return self.index.search(queries, k)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["ivf:nlist=16", "hnsw:M=8"])
def test_searches_read_the_index_memory_mapped_in_query_blocks(nq_sample_index, tmp_path,
                                                              monkeypatch, spec):
    _, index, queries = nq_sample_index
    ann_index = AnnIndex.of(_copy(index, tmp_path / "emb"), IndexSpec.parse(spec))
    ann_index.open()  # built
    flags, real_read = [], faiss.read_index
    monkeypatch.setattr(faiss, "read_index",
                        lambda path, flag=0: flags.append(flag) or real_read(path, flag))
    loaded = ann_index.open()
    if spec.startswith("ivf"):  # the lists stay on disk, mmapped by OnDiskInvertedLists
        assert flags == [faiss.IO_FLAG_ONDISK_SAME_DIR]
        lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(loaded).invlists)
        assert isinstance(lists, faiss.OnDiskInvertedLists)
    else:  # the vectors are mapped, not read into memory
        assert flags == [faiss.IO_FLAG_MMAP_IFC]

    spy = _Spy(loaded)
    monkeypatch.setattr(AnnIndex, "open", lambda self: spy)
    monkeypatch.setattr(ann, "QUERY_BLOCK", 64)
    assert len(ann_index.search(queries, K)) == 300
    assert spy.blocks == [64, 64, 64, 64, 44]


def test_index_specs_parse_and_bad_ones_fail_in_one_line():
    assert IndexSpec.parse(None) == IndexSpec("flat", {})
    assert IndexSpec.parse("ivf:nlist=4096,NPROBE=64") == IndexSpec("ivf", {"nlist": 4096,
                                                                         "nprobe": 64})
    assert IndexSpec.parse("hnsw:m=48,efsearch=256").params == {"M": 48, "efSearch": 256}
    assert IndexSpec.parse("ivf").resolve(4349, 384) == {"nlist": 108, "nprobe": 64, "pq": None,
                                                         "refine": 1}
    assert IndexSpec.parse("ivf").resolve(32_000_000, 1024)["nlist"] == 22627
    hint = ("use flat, ivf[:nlist=N,nprobe=N,pq=M,refine=R] or "
            "hnsw[:M=N,efConstruction=N,efSearch=N]")
    for text, line in [
        ("ivff", f"field 'index': unknown index kind 'ivff'; did you mean 'ivf'? ({hint})"),
        ("hnsw:ef=8", (f"field 'index': hnsw has no parameter 'ef' (its parameters: M, "
                      f"efConstruction, efSearch) ({hint})")),
        ("ivf:nlist=0", f"field 'index': nlist must be a positive integer, got '0' ({hint})"),
        ("ivf:nprobe", f"field 'index': nprobe must be a positive integer, got '' ({hint})"),
        ("flat:nlist=8", (f"field 'index': flat has no parameter 'nlist' (its parameters: "
                         f"none) ({hint})")),
    ]:
        with pytest.raises(InputError) as caught:
            IndexSpec.parse(text)
        assert caught.value.line() == line
    for text, size, line in [
        ("ivf:nlist=64,nprobe=128", 4349, ("field 'index': nprobe 128 exceeds nlist 64 "
                                          "(nprobe counts lists searched)")),
        ("ivf:nlist=5000", 4349, ("field 'index': nlist 5000 exceeds the corpus's 4349 passages "
                                 "(lower nlist)")),
        ("ivf:pq=7", 4349, ("field 'index': pq 7 does not divide the embedding dimension 384 "
                           "(pick a divisor, e.g. 64)")),
    ]:
        with pytest.raises(InputError) as caught:
            IndexSpec.parse(text).resolve(size, 384)
        assert caught.value.line() == line


def test_an_index_where_no_dense_retrieval_runs_is_refused(small_sample, tmp_path):
    run = tmp_path / "run.trec"
    run.write_text(f"{small_sample.queries[0].qid} Q0 {small_sample.queries[0].gold[0].pid} 1 "
                   "1.0 t\n")
    for options, why in [({"encoder": "bm25"}, "BM25 ranks"), ({"run": run}, "the run file ranks"),
                         ({"pool": "hgp"}, "the pools are the human gold")]:
        with pytest.raises(InputError) as caught:
            build_pools(small_sample, index="hnsw", **options)
        assert caught.value.line() == (f"field 'index': --index is for dense retrieval, and "
                                       f"{why} (leave --index unset)")


def test_near_ties_faiss_misorders_are_scored_exactly_against_the_whole_shard(tmp_path):
    # 200 unit vectors within 3e-4 of one direction, 1,024-d: every exact score rounds to the
    # same float32, so the top 5 are the first 5 positions; FAISS's float32 sums scatter them
    # by more than their spread (here its top 21 hold none of those 5: the ordering of its
    # sums depends on its SIMD kernel), so the row is re-scored against the whole shard
    rng = np.random.default_rng(1)
    centre = rng.standard_normal(1024)
    vectors = centre + 3e-4 * rng.standard_normal((200, 1024))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    query = (centre / np.linalg.norm(centre)).astype(np.float32)[None]
    index = EmbeddingIndex(tmp_path, 200, 100)
    for shard in range(index.shards):
        np.save(index.path(shard), vectors[index.span(shard)])
    (ids, scores), = index.search(query, 5)
    exact_ids, exact_scores = _exact(index, query, 5)
    assert ids.tolist() == exact_ids[0].tolist() == [0, 1, 2, 3, 4]
    assert np.array_equal(scores, exact_scores[0])


def _flip(path, offset: int, count: int) -> None:
    """Invert `count` bytes of `path` from `offset` (negative: from the end), its size kept."""
    with path.open("r+b") as f:
        f.seek(offset, 2 if offset < 0 else 0)
        where = f.tell()
        data = f.read(count)
        f.seek(where)
        f.write(bytes(255 - b for b in data))


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "damaged"), [
    ("hnsw:M=16,efConstruction=40", "hnsw-M16-efc40.index"),  # its stored vectors
    ("ivf:nlist=16,nprobe=16", "ivf-nlist16.ivfdata"),  # its inverted lists (codes and ids)
])
def test_an_index_with_flipped_bytes_is_never_searched_but_said_and_rebuilt(
        nq_sample_index, tmp_path, capsys, monkeypatch, spec, damaged):
    _, index, queries = nq_sample_index
    ann_index = AnnIndex.of(_copy(index, tmp_path / "emb"), IndexSpec.parse(spec))
    first = ann_index.search(queries, K)
    path = ann_index.embeddings.folder / damaged
    size = path.stat().st_size
    _flip(path, -size // 2, size // 4)  # a quarter of the file, the size unchanged
    capsys.readouterr()
    again = ann_index.search(queries, K)
    said = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert said == [(f"warning: the {ann_index.kind} index {ann_index.path} is damaged ({damaged}: "
                    "its bytes differ from its recorded sha256); deleting and rebuilding it")]
    assert all(np.array_equal(a, f) for (a, _), (f, _) in zip(again, first))

    hashed = []
    real = checksums._sha256
    monkeypatch.setattr(checksums, "_sha256", lambda p: hashed.append(p.name) or real(p))
    ann_index.search(queries[:1], K)
    assert hashed == [] and "warning" not in capsys.readouterr().err  # a warm open reads none
    path.touch()  # its times changed, its bytes the same: read and verified once
    ann_index.search(queries[:1], K)
    assert hashed == [damaged] and "warning" not in capsys.readouterr().err


def test_an_index_too_big_for_the_corpus_fails_before_any_encoder_loads(small_sample,
                                                                       monkeypatch):
    from labeler.retrieval import dense

    monkeypatch.setattr(dense, "load_encoder", lambda *a, **k: pytest.fail("encoder loaded"))
    size = len(small_sample.corpus)
    for spec, line in [
        (f"ivf:nlist={size + 1}", (f"field 'index': nlist {size + 1} exceeds the corpus's {size} "
                                  "passages (lower nlist)")),
        ("ivf:nlist=4,nprobe=5", ("field 'index': nprobe 5 exceeds nlist 4 (nprobe counts lists "
                                 "searched)")),
    ]:
        with pytest.raises(InputError) as caught:
            build_pools(small_sample, index=spec)
        assert caught.value.line() == line
