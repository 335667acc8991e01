"""The paper's corpora by name (`--corpus wiki-dpr|msmarco-passage|kilt-wikipedia`), on real
rows of their Hub layouts served from fixtures, and human gold mapped onto a corpus."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

from labeler.errors import HubError, UnknownNameError
from labeler.sources import CORPORA, load_corpus, load_source
from labeler.sources.corpora import HUB, from_kilt_rows

FIXTURES = Path(__file__).parent.parent / "fixtures"
#: Hub id -> the fixture standing in for it: 35 DPR psgs_w100 passages in Tevatron's corpus
#: layout {docid, title, text} (fixtures/README.md), and the Tevatron NQ dev rows whose
#: positives are among them
SERVED = {"Tevatron/wikipedia-nq-corpus": "tevatron_wiki_corpus.jsonl",
          "Tevatron/msmarco-passage-corpus": "tevatron_wiki_corpus.jsonl",
          "Tevatron/wikipedia-nq": "tevatron_nq_dev.jsonl",
          "facebook/kilt_tasks": "kilt_fever_dev.jsonl"}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """Serve the Hub ids of SERVED from their fixtures with the real json builder, and
    facebook/kilt_wikipedia from a page written by the test (`hub.kilt_rows`)."""
    real = datasets.load_dataset
    calls, calls_kilt = [], []

    def load_dataset(path, name=None, *, split, **kwargs):
        calls.append((path, name, split))
        if path == "facebook/kilt_wikipedia":
            page = tmp_path / "kilt_wikipedia.jsonl"
            page.write_text("".join(json.dumps(row) + "\n" for row in calls_kilt))
            return real("json", data_files={split: str(page)}, split=split)
        return real("json", data_files={split: str(FIXTURES / SERVED[path])}, split=split)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    load_dataset.calls, load_dataset.kilt_rows = calls, calls_kilt
    return load_dataset


@pytest.mark.parametrize("name", ["wiki-dpr", "msmarco-passage"])
def test_a_named_corpus_reads_tevatron_rows_with_its_licence_and_revision(hub, name):
    corpus = load_corpus(name)
    assert hub.calls == [HUB[name]]
    assert (corpus.name, corpus.license) == (name, {"wiki-dpr": "cc-by-sa-3.0",
                                                    "msmarco-passage": "other"}[name])
    assert corpus.revision.startswith("fingerprint:")  # offline: the data's own fingerprint
    assert len(corpus) == 35
    first = corpus["11828866"]  # the psgs_w100 id is the pid
    assert first.title == "Does He Love You" and "Linda Davis" in first.text


def test_gold_passages_map_onto_the_corpus_by_passage_id(hub):
    source = load_source("nq-tevatron", corpus="wiki-dpr")
    assert source.corpus.name == "wiki-dpr"
    assert source.revision.endswith(f"+corpus:wiki-dpr@{source.corpus.revision}")
    assert all(p == source.corpus[p.pid] for q in source.queries for p in q.gold)
    # DPR positives: 4 distinct for the first question, 5 for the second, all in the corpus
    assert source.gold_in_corpus() == {"gold": 9, "in_corpus": 9, "queries_with_gold": 2,
                                       "queries_with_gold_in_corpus": 2}


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
                                       "queries_with_gold_in_corpus": 2}


def test_kilt_wikipedia_paragraphs_resolve_kilt_provenance(hub):
    # one page in the kilt_wikipedia layout (hand-written; no offline copy of a real row):
    # the page of the first FEVER claim's provenance, paragraph 0 being the title as in KILT
    hub.kilt_rows.append({"kilt_id": "1073955", "wikipedia_id": "1073955",
                          "wikipedia_title": "Soul Food (film)",
                          "text": {"paragraph": ["Soul Food (film)\n", "<paragraph 1>\n",
                                                 "<paragraph 2>\n"]}})
    source = load_source("fever", corpus="kilt-wikipedia", limit=2)
    assert source.corpus.license == "cc-by-sa-3.0"
    assert [p.pid for p in source.corpus.passages] == ["1073955_0", "1073955_1", "1073955_2"]
    first, second = source.queries
    assert [(p.pid, p.title, p.text) for p in first.gold] == [
        ("1073955_1", "Soul Food (film)", "<paragraph 1>")]
    assert second.gold == []  # Telemundo's page is not in this corpus
    assert source.gold_in_corpus()["in_corpus"] == 1


def test_kilt_paragraphs_read_the_same_in_either_arrow_layout():
    as_dict = {"wikipedia_id": "7", "wikipedia_title": "T", "text": {"paragraph": ["T\n", "a"]}}
    as_rows = {**as_dict, "text": [{"paragraph": "T\n"}, {"paragraph": "a"}]}
    assert from_kilt_rows([as_dict]) == from_kilt_rows([as_rows])


def test_a_named_corpus_offline_says_which_and_how_to_pass_a_file():
    with pytest.raises(HubError) as error:
        load_source("nq-sample", corpus="wiki-dpr")  # offline, nothing cached
    line = error.value.line()
    assert line.startswith("Tevatron/wikipedia-nq-corpus: cannot load corpus 'wiki-dpr': ")
    assert line.endswith("(needs network on first use; later runs read the local cache; or "
                         "pass --corpus FILE: a FlashRAG corpus jsonl, one {id, contents} per "
                         "line, contents \"Title\"\\ntext)")


def test_an_unknown_corpus_name_lists_the_corpora():
    with pytest.raises(UnknownNameError) as error:
        load_source("nq-sample", corpus="wiki_dpr")
    assert str(error.value) == ("unknown corpus 'wiki_dpr'. Did you mean 'wiki-dpr'? Available: "
                                "wiki-dpr, msmarco-passage, kilt-wikipedia, FILE")
    assert list(CORPORA) == ["wiki-dpr", "msmarco-passage", "kilt-wikipedia"]


def test_every_registered_corpus_names_a_loader():
    for target in CORPORA.values():
        module, attr = target.split(":")
        assert callable(getattr(__import__(module, fromlist=[attr]), attr))
