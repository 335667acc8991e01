"""BM25 over several boosted fields with Snowball stems, against an independent scorer
(tests/support/bm25_reference.py) on the real WANDS products of the fixture; the settings'
options and errors, and what an index's identity holds."""

from __future__ import annotations

import hashlib
import json

import bm25s
import pytest
from support.bm25_reference import ranking, terms, wands_products, wands_queries

from labeler.errors import InputError
from labeler.retrieval import build_pools
from labeler.retrieval.bm25 import BM25, bm25_run, index_folder, open_index
from labeler.retrieval.bm25_config import analyze, parse_fields
from labeler.sources.corpus import Corpus
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source
from labeler.tasks.base import TaskConfig

#: the rubric experiment's BM25 on WANDS and ESCI
EXPERIMENT = BM25(fields=(("title", 9.3), ("text", 4.1)), stemmer="english")


@pytest.fixture(scope="module")
def products():
    return wands_products()


@pytest.fixture(scope="module")
def corpus(products):
    return Corpus([Passage(d["pid"], d["title"], d["text"]) for d in products])


@pytest.fixture(scope="module")
def queries():
    return [Query(qid, text, []) for qid, text in wands_queries()]


def test_the_analyser_is_the_experiments():
    # punctuation (ASCII, and the curly single quote) splits; stems are Snowball English's
    assert analyze(["All-Clad 7 qt. Slow-Cookers’ lids"], EXPERIMENT) == [
        ["all", "clad", "7", "qt", "slow", "cooker", "lid"]]
    assert terms("All-Clad 7 qt. Slow-Cookers’ lids") == analyze(
        ["All-Clad 7 qt. Slow-Cookers’ lids"], EXPERIMENT)[0]


@pytest.mark.parametrize("bm25", [
    EXPERIMENT,
    BM25(fields=(("title", 1.0),), stemmer="english"),
    BM25(fields=(("contents", 1.0),), stemmer="english", k1=0.9, b=0.4),
    BM25(fields=(("title", 2.0), ("text", 1.0), ("contents", 0.5)), stemmer="english", k1=1.5,
         b=1.0),
], ids=["experiment", "title", "contents-k1-b", "three-fields"])
def test_rankings_equal_an_independent_scorer(bm25, products, corpus, queries, tmp_path):
    run = bm25_run(corpus, queries, k=len(products), bm25=bm25, cache_dir=tmp_path)
    assert sum(len(r) for r in run.values()) > 10  # the fixture's queries match products
    for query in queries:
        expected = ranking(products, query.question, dict(bm25.fields), k1=bm25.k1, b=bm25.b)
        got = run[query.qid]
        assert list(got) == [pid for pid, _ in expected], query.question
        assert list(got.values()) == pytest.approx([s for _, s in expected], rel=1e-5)


def test_a_cut_at_k_keeps_the_best(products, corpus, queries, tmp_path):
    full = bm25_run(corpus, queries, k=len(products), bm25=EXPERIMENT, cache_dir=tmp_path)
    top = bm25_run(corpus, queries, k=2, bm25=EXPERIMENT, cache_dir=tmp_path)
    assert top == {qid: dict(list(r.items())[:2]) for qid, r in full.items()}


def test_each_field_has_its_own_index_keyed_by_what_makes_it(corpus, tmp_path):
    folder = index_folder(corpus, EXPERIMENT, field="title", cache_dir=tmp_path)
    assert folder != index_folder(corpus, EXPERIMENT, field="text", cache_dir=tmp_path)
    for changed in (BM25(fields=EXPERIMENT.fields, stemmer=None),
                    BM25(fields=EXPERIMENT.fields, stemmer="porter"),
                    BM25(fields=EXPERIMENT.fields, stemmer="english", k1=1.0),
                    BM25(fields=EXPERIMENT.fields, stemmer="english", b=0.5)):
        assert index_folder(corpus, changed, field="title", cache_dir=tmp_path) != folder
    # boosts weigh the fields' scores at query time: the same index, another ranking
    boosted = BM25(fields=(("title", 1.0), ("text", 40.0)), stemmer="english")
    assert index_folder(corpus, boosted, field="title", cache_dir=tmp_path) == folder
    built = open_index(corpus, EXPERIMENT, field="title", cache_dir=tmp_path).folder
    assert built == folder and bm25s.BM25.load(folder, mmap=True).k1 == 1.2
    # the one unstemmed field keeps the key it had before fields were options
    key = {"k1": 1.2, "b": 0.75, "method": "lucene", "stopwords": "en",
           "bm25s": bm25s.__version__}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    assert index_folder(corpus, cache_dir=tmp_path).name == f"{corpus.fingerprint}-{digest}"


def test_the_boosts_change_the_order(products, corpus, queries, tmp_path):
    title = bm25_run(corpus, queries, k=5, bm25=EXPERIMENT, cache_dir=tmp_path)
    text = BM25(fields=(("title", 1.0), ("text", 40.0)), stemmer="english")
    described = bm25_run(corpus, queries, k=5, bm25=text, cache_dir=tmp_path)
    assert title != described
    for query in queries:
        expected = ranking(products, query.question, {"title": 1.0, "text": 40.0})
        assert list(described[query.qid]) == [pid for pid, _ in expected][:5]


def test_a_dataset_names_its_defaults_and_options_override_them(corpus, queries, tmp_path):
    source = Source("wands-like", "r", queries[:2], corpus,
                    bm25={"fields": "title^9.3,text^4.1", "stemmer": "english"})
    pools = build_pools(source, pool="rp", k=3, encoder="bm25", cache_dir=tmp_path)
    assert pools.describe()["encoder"] | {"model_id": None} == {
        "name": "bm25", "model_id": None, "pooling": None, "fields": {"title": 9.3, "text": 4.1},
        "stemmer": "english", "stopwords": None, "k1": 1.2, "b": 0.75}
    plain = build_pools(source, pool="rp", k=3, encoder="bm25", cache_dir=tmp_path,
                        bm25={"fields": "contents", "stemmer": "none", "k1": 0.9})
    assert plain.describe()["encoder"]["model_id"] == \
        "bm25s lucene k1=0.9 b=0.75 fields=contents^1 stemmer=none"


def test_bad_settings_fail_with_their_option():
    assert parse_fields("title^9.3, text") == (("title", 9.3), ("text", 1.0))
    with pytest.raises(InputError, match="bad BM25 field 'title\\^x'") as bad:
        BM25.of(fields="title^x")
    assert bad.value.field_name == "bm25_fields"
    with pytest.raises(InputError, match="unknown BM25 field 'description'"):
        BM25.of(fields="title^9.3,description^4.1")
    with pytest.raises(InputError, match="named twice"):
        BM25.of(fields="title,title^2")
    with pytest.raises(InputError, match="boost of field 'text' must be positive"):
        BM25.of(fields="text^0")
    with pytest.raises(InputError, match="no Snowball stemmer 'klingon'") as bad:
        BM25.of(stemmer="klingon")
    assert "english" in bad.value.hint
    with pytest.raises(InputError, match="b must be in"):
        BM25.of(b=1.5)
    with pytest.raises(InputError, match="--bm25-fields set BM25 retrieval"):
        TaskConfig(dataset="nq-sample", encoder="minilm", bm25_fields="title")
    with pytest.raises(InputError, match="--bm25-stemmer set BM25 retrieval"):
        TaskConfig(dataset="nq-sample", encoder="bm25", pool="hgp", bm25_stemmer="english")
    TaskConfig(dataset="nq-sample", encoder="bm25", bm25_stemmer="english", bm25_k1=0.9)


def test_as_the_experiment_ran_zero_score_products_fill_the_k(products, corpus, queries,
                                                                tmp_path):
    """`zeros`: every product scored and numpy's argsort(-scores)[:k], as cheat_at_search's
    BM25Search.search: the positive scores first, as without `zeros`, then zero-score products
    until there are k."""
    import numpy as np

    k = len(products)
    kept = bm25_run(corpus, queries, k=k, bm25=EXPERIMENT, cache_dir=tmp_path)
    ran = bm25_run(corpus, queries, k=k, bm25=EXPERIMENT, cache_dir=tmp_path, zeros=True)
    for query in queries:
        positive = {pid: s for pid, s in ran[query.qid].items() if s > 0}
        assert len(ran[query.qid]) == k and positive == pytest.approx(kept[query.qid])
        scores = np.zeros(k)
        for pid, score in ran[query.qid].items():
            scores[[d["pid"] for d in products].index(pid)] = score
        assert list(ran[query.qid]) == [products[i]["pid"] for i in np.argsort(-scores)]
