"""Search data: `search:PATH` queries (TSV or JSONL), --qrels judgments, bundled cisi-sample."""

from __future__ import annotations

import pytest

from labeler.errors import InputError
from labeler.sources.registry import load_source

CORPUS = "labeler/data/cisi_sample/corpus.jsonl.gz"


def test_cisi_sample_has_queries_judgments_and_their_documents():
    source = load_source("cisi-sample")
    assert len(source.queries) == 30 and len(source.corpus) == 965
    assert source.queries[0].question.startswith("What problems and concerns are there")
    for q in source.queries:
        assert q.relevance and all(label == 1 for label in q.relevance.values())
        assert {p.pid for p in q.gold} == set(q.relevance)  # every judged document bundled
    assert source.gold_in_corpus()["queries_with_gold_in_corpus"] == 30
    assert load_source("cisi-sample", limit=2).revision == source.revision


def test_tsv_and_jsonl_queries_with_graded_qrels(tmp_path):
    tsv = tmp_path / "queries.tsv"
    tsv.write_text("3\tWhat is information science?\n\n6\tHow are libraries used?\n",
                   encoding="utf-8")
    jsonl = tmp_path / "queries.jsonl"
    jsonl.write_text('{"_id": "3", "text": "What is information science?"}\n'
                     '{"qid": 6, "query": "How are libraries used?"}\n', encoding="utf-8")
    qrels = tmp_path / "graded.qrels"
    qrels.write_text("3 0 2 2\n3 0 6 0\n6 0 2 1\n6 0 999999 1\n", encoding="utf-8")
    for path, judged in ((tsv, qrels), (jsonl, str(qrels))):  # a str, as --qrels passes it
        source = load_source(f"search:{path}", corpus=CORPUS, qrels=judged)
        assert [(q.qid, q.question) for q in source.queries] == [
            ("3", "What is information science?"), ("6", "How are libraries used?")]
        first, second = source.queries
        assert first.relevance == {"2": 2, "6": 0}  # graded, a 0 kept as judged non-relevant
        assert [p.pid for p in first.gold] == ["2"]
        assert [p.pid for p in second.gold] == ["2"]  # 999999 is not in the corpus
        assert "+qrels:" in source.revision


def test_bad_search_files_name_the_file_and_line(tmp_path):
    tsv = tmp_path / "queries.tsv"
    tsv.write_text("1\tfine\nno tab here\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_source(f"search:{tsv}")
    assert str(caught.value) == f"{tsv}:2: a queries line is qid<TAB>query"
    jsonl = tmp_path / "queries.jsonl"
    jsonl.write_text('{"qid": "1", "text": "fine"}\n{"qid": "2"}\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_source(f"search:{jsonl}")
    assert str(caught.value) == f"{jsonl}:2 field 'text': missing or empty query text"
    other = tmp_path / "other.qrels"
    other.write_text("77 0 2 1\n", encoding="utf-8")
    with pytest.raises(InputError, match="the qrels judge none of the queries"):
        load_source("cisi-sample", qrels=other)
