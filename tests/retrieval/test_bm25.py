"""BM25 through bm25s: Lucene's formula on the bundled cisi-sample, and pools from it."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest
from bm25s.stopwords import STOPWORDS_EN

from labeler.metrics.ranking import rank_metrics
from labeler.retrieval import build_pools
from labeler.retrieval.bm25 import K1, B, bm25_run
from labeler.sources import load_source


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
