"""The paper's corpora by name (`--corpus wiki-dpr|msmarco-passage|kilt-wikipedia`) and human
gold mapped onto a corpus; loading each from the Hub: tests/sources/test_hub_mirror.py."""

from __future__ import annotations

import json

import datasets
import pytest

from labeler.errors import HubError, UnknownNameError
from labeler.sources.corpora import kilt_paragraph_batches
from labeler.sources.registry import CORPORA, load_corpus, load_source


def test_gold_passages_map_onto_the_corpus_by_identical_text(tmp_path):
    # a corpus holding the first two questions' gold chunks under other ids, not the third's
    sample = load_source("nq-sample", limit=3)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(
        json.dumps({"id": f"w{i}", "contents": f'"{q.gold[0].title}"\n{q.gold[0].text}'}) + "\n"
        for i, q in enumerate(sample.queries[:2])))
    source = load_source("nq-sample", corpus=corpus, limit=3)
    assert [[p.pid for p in q.gold] for q in source.queries] == [
        ["w0"], ["w1"], [sample.queries[2].gold[0].pid]]  # the third keeps its own text
    assert source.gold_in_corpus() == {"gold": 3, "in_corpus": 2, "queries_with_gold": 3,
                                       "queries_with_gold_in_corpus": 2, "title_only": 0}


def test_kilt_paragraphs_read_the_same_in_kilts_file_and_the_hub_builders_layout():
    as_file = {"wikipedia_id": ["7"], "wikipedia_title": ["T"], "text": [["T\n", "a"]]}
    as_builder = {**as_file, "text": [{"paragraph": ["T\n", "a"]}]}
    batches = [list(kilt_paragraph_batches(datasets.Dataset.from_dict(rows)))
               for rows in (as_file, as_builder)]  # a Dataset iterates as page dicts
    assert batches[0] == batches[1] == [{"pid": ["7_0", "7_1"], "title": ["T", "T"],
                                         "text": ["T", "a"]}]


def test_a_named_corpus_offline_says_which_and_how_to_pass_a_file():
    with pytest.raises(HubError) as error:
        load_source("nq-sample", corpus="wiki-dpr")  # offline, nothing cached
    line = error.value.line()
    assert line.startswith("Tevatron/wikipedia-nq-corpus: cannot load corpus 'wiki-dpr': not "
                           "in the local cache and the Hub cannot be reached (")
    assert line.endswith("(needs network on first use; later runs read the local cache; or "
                         "pass --corpus FILE: a FlashRAG corpus jsonl, one {id, contents} per "
                         "line, contents \"Title\"\\ntext)")


def test_an_unknown_corpus_name_lists_the_corpora():
    with pytest.raises(UnknownNameError) as error:
        load_source("nq-sample", corpus="wiki_dpr")
    assert str(error.value) == ("unknown corpus 'wiki_dpr'. Did you mean 'wiki-dpr'? Available: "
                                "kilt-w100, wiki-dpr, msmarco-passage, kilt-wikipedia, FILE")
    assert list(CORPORA) == ["kilt-w100", "wiki-dpr", "msmarco-passage", "kilt-wikipedia"]


def test_every_registered_corpus_names_a_loader():
    for target in CORPORA.values():
        module, attr = target.split(":")
        assert callable(getattr(__import__(module, fromlist=[attr]), attr))


@pytest.mark.parametrize(("name", "passages", "known"), [
    ("wiki-dpr", 21_015_324, "exact"), ("msmarco-passage", 8_841_823, "exact"),
    ("kilt-w100", 34_000_000, "estimate"), ("kilt-wikipedia", 5_903_530, "lower bound")])
def test_a_dry_run_reads_a_named_corpus_size_from_its_pin_without_downloading(
        name, passages, known, tmp_path, monkeypatch):
    # offline with an empty cache: a download would fail, so none is tried
    monkeypatch.setenv("LABELER_CACHE_DIR", str(tmp_path))
    corpus = load_corpus(name, stored_only=True)
    assert (corpus.name, len(corpus), corpus.known.split(":")[0]) == (name, passages, known)
    assert not (tmp_path / "corpora").exists()
