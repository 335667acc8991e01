"""BM25 through bm25s: Lucene's formula on the bundled cisi-sample, pools from it, and the
on-disk index: bm25s's own arrays, the same rankings as a full sort, cached and rebuilt."""

from __future__ import annotations

import math
import re
from collections import Counter

import bm25s
import numpy as np
import pytest
from bm25s.stopwords import STOPWORDS_EN

from labeler.metrics.ranking import rank_metrics
from labeler.retrieval import build_pools
from labeler.retrieval.bm25 import BM25, K1, B, bm25_run, index_folder, open_index
from labeler.sources.corpus import Corpus
from labeler.sources.passage import Passage
from labeler.sources.registry import load_source


@pytest.fixture(scope="module")
def cisi():
    return load_source("cisi-sample")


def _words(text: str) -> list[str]:
    """bm25s's default tokenizer, written out: lower-cased \\w\\w+ tokens, English stop words out."""
    return [w for w in re.findall(r"(?u)\b\w\w+\b", text.lower()) if w not in STOPWORDS_EN]


def test_scores_are_lucene_bm25_computed_by_hand(cisi):
    docs = {p.pid: Counter(_words(p.contents)) for p in cisi.corpus.passages}
    n, avgdl = len(docs), sum(sum(c.values()) for c in docs.values()) / len(docs)
    df = Counter(w for c in docs.values() for w in c)
    query = cisi.queries[2]  # "What is information science? Give definitions where possible."
    run = bm25_run(cisi.corpus, [query], k=20)[query.qid]
    assert len(run) == 20
    for pid, score in run.items():
        tf, dl = docs[pid], sum(docs[pid].values())
        expected = sum(math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                       * tf[w] / (tf[w] + K1 * (1 - B + B * dl / avgdl))
                       for w in _words(query.question) if w in df)
        assert score == pytest.approx(expected, rel=1e-4)
    assert list(run.values()) == sorted(run.values(), reverse=True)


def test_documents_without_a_query_word_are_not_retrieved(cisi):
    [query] = load_source("cisi-sample", limit=1).queries
    query.question = "zzzz qqqq"  # no word of the corpus
    assert bm25_run(cisi.corpus, [query], k=5) == {query.qid: {}}


def test_bm25_pools_rank_cisi_judgments_far_above_chance(cisi):
    pools = build_pools(cisi, pool="rp", k=100, encoder="bm25")
    assert pools.describe()["encoder"]["name"] == "bm25"
    run = {qid: {c.passage.pid: c.score for c in cands} for qid, cands in pools.items()}
    qrels = {q.qid: q.relevance for q in cisi.queries}
    bm25 = rank_metrics(run, qrels, ks=[10])["ndcg@10"].mean()
    # the same pools in reverse order: the judged-relevant documents BM25 ranks low first
    reverse = {qid: {pid: -s for pid, s in docs.items()} for qid, docs in run.items()}
    assert bm25 > 0.2 and bm25 > 2 * rank_metrics(reverse, qrels, ks=[10])["ndcg@10"].mean()
    assert all(c.gold == (c.passage.pid in qrels[qid]) for qid, cands in pools.items()
               for c in cands)


def _in_memory(corpus):
    """bm25s's own in-memory index of `corpus`, built as bm25_run built it before the index
    moved to disk: the reference the on-disk index must equal."""
    tokens = bm25s.tokenize(corpus.contents(range(len(corpus))), stopwords="en",
                            show_progress=False)
    index = bm25s.BM25(k1=K1, b=B, method="lucene")
    index.index(tokens, show_progress=False)
    return index


def _full_sort_run(index, corpus, queries, k):
    """The ranking bm25_run made before: every score, fully sorted (stable)."""
    words = bm25s.tokenize([q.question for q in queries], stopwords="en", return_ids=False,
                           show_progress=False)
    run = {}
    for query, terms in zip(queries, words):
        known = [w for w in terms if w in index.vocab_dict]
        scores = index.get_scores(known) if known else np.zeros(len(corpus), np.float32)
        top = np.argsort(-scores, kind="stable")[:k]
        run[query.qid] = {corpus.passages[i].pid: float(scores[i]) for i in top
                          if scores[i] > 0}
    return run


@pytest.mark.parametrize("name", ["cisi-sample", "nq-sample"])
def test_the_disk_index_is_bm25s_own_index_and_ranks_as_a_full_sort(name):
    source = load_source(name)
    corpus, reference = source.corpus, _in_memory(source.corpus)
    # small batches and chunks: many spill files, many term ranges
    index = open_index(corpus, batch=500, chunk=20_000)
    for array in ("data", "indices", "indptr"):
        assert np.array_equal(index.model.scores[array], reference.scores[array]), array
        assert index.model.scores[array].dtype == reference.scores[array].dtype
    assert isinstance(index.model.scores["data"], np.memmap)
    assert index.model.vocab_dict == reference.vocab_dict
    assert index.model.scores["num_docs"] == reference.scores["num_docs"]
    for k in (1, 10, 100):
        run = bm25_run(corpus, source.queries, k=k)
        expected = _full_sort_run(reference, corpus, source.queries, k)
        assert {q: list(r.items()) for q, r in run.items()} == {
            q: list(r.items()) for q, r in expected.items()}


def test_equal_scores_rank_by_corpus_position(cisi):
    # every passage twice (the copy after all originals): each copy ties with its original
    passages = cisi.corpus.passages
    twice = Corpus([*passages, *(Passage(f"{p.pid}-copy", p.title, p.text) for p in passages)])
    queries = cisi.queries[:20]
    run = bm25_run(twice, queries, k=50)
    assert run == _full_sort_run(_in_memory(twice), twice, queries, 50)
    position = {p.pid: i for i, p in enumerate(twice.passages)}
    for ranking in run.values():
        assert list(ranking) == sorted(ranking, key=lambda pid: (-ranking[pid], position[pid]))
        assert all(ranking[f"{pid}-copy"] == score for pid, score in ranking.items()
                   if f"{pid}-copy" in ranking)
    assert sum(pid.endswith("-copy") for ranking in run.values() for pid in ranking) > 400
    everything = bm25_run(twice, queries[:3], k=len(twice))
    assert everything == _full_sort_run(_in_memory(twice), twice, queries[:3], len(twice))


def test_the_index_is_built_once_per_corpus_and_parameters(cisi, tmp_path):
    folder = index_folder(cisi.corpus)
    assert folder == index_folder(Corpus(list(cisi.corpus.passages)))  # same passages
    assert folder != index_folder(cisi.corpus, BM25(k1=0.9))
    assert folder != index_folder(load_source("nq-sample").corpus)
    assert folder != index_folder(cisi.corpus, cache_dir=tmp_path / "other")
    open_index(cisi.corpus)
    record = (folder / "index.json").stat().st_mtime_ns
    open_index(cisi.corpus)
    assert (folder / "index.json").stat().st_mtime_ns == record
    assert sorted(p.name for p in folder.iterdir()) == sorted([
        "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy",
        "vocab.index.json", "params.index.json", "index.json", "index.seen.json"])
    loaded = bm25s.BM25.load(folder, mmap=True)  # bm25s reads it as its own
    assert loaded.k1 == K1 and loaded.b == B and loaded.method == "lucene"


def test_a_cut_or_damaged_index_is_said_and_rebuilt(cisi, capsys):
    query = cisi.queries[2]
    before = bm25_run(cisi.corpus, [query], k=20)
    folder = index_folder(cisi.corpus)
    capsys.readouterr()
    (folder / "index.json").unlink()  # a build killed before its commit record
    assert bm25_run(cisi.corpus, [query], k=20) == before
    err = " ".join(capsys.readouterr().err.split())
    assert "is incomplete (no commit record); deleting and rebuilding it" in err
    data = folder / "data.csc.index.npy"
    data.write_bytes(data.read_bytes()[:1000])  # a file cut short
    assert bm25_run(cisi.corpus, [query], k=20) == before
    err = " ".join(capsys.readouterr().err.split())
    assert err.count("warning:") == 1 and "is incomplete (files" in err
    assert bm25_run(cisi.corpus, [query], k=20) == before
    assert capsys.readouterr().err == ""  # rebuilt and committed: read as it is


def test_an_index_with_flipped_bytes_is_said_and_rebuilt_never_searched(cisi, capsys):
    queries = cisi.queries[:5]
    before = bm25_run(cisi.corpus, queries, k=20)
    folder = index_folder(cisi.corpus)
    data = folder / "data.csc.index.npy"
    raw = bytearray(data.read_bytes())
    raw[-4000:] = bytes(4000)  # the last 1,000 weights zeroed, the size unchanged
    data.write_bytes(bytes(raw))
    capsys.readouterr()
    assert bm25_run(cisi.corpus, queries, k=20) == before
    said = " ".join(capsys.readouterr().err.split())
    assert said.count("warning:") == 1
    assert (f"warning: the BM25 index {folder} is damaged (data.csc.index.npy: its bytes differ "
            "from its recorded sha256); deleting and rebuilding it") in said
    assert bm25_run(cisi.corpus, queries, k=20) == before
    assert "warning" not in capsys.readouterr().err
