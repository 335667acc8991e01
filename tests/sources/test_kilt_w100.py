"""kilt-w100: KILT pages cut into 100-word passages with their paragraph spans, and KILT
provenance mapped onto the passages that overlap it. The page is real text in KILT's layout:
HotpotQA's context paragraphs of "Scott Derrickson" and "Ed Wood (film)" (fixtures/README),
one KILT paragraph per sentence, with KILT's markup on two of them."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from labeler.errors import HubError
from labeler.sources.corpus import Corpus
from labeler.sources.kilt_w100 import WORDS, cut, load_kilt_w100, passages_of
from labeler.sources.types import GoldRef, Query, Source

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _page() -> dict:
    context = json.loads((FIXTURES / "hotpot_dev_distractor.json").read_text())[0]["context"]
    sentences = [s.strip() for i in (1, 0) for s in context["sentences"][i]]
    paragraphs = ["Scott Derrickson\n", "Section::::Career.\n",
                  *(f"BULLET::::- {s}\n" if i == 2 else f"{s}\n" for i, s in enumerate(sentences))]
    return {"wikipedia_id": "4366", "wikipedia_title": "Scott Derrickson", "text": paragraphs}


def test_a_page_is_cut_into_consecutive_100_word_blocks_with_their_paragraphs():
    page = _page()
    words = [w for p in page["text"][1:] for w in
             p.removeprefix("Section::::").removeprefix("BULLET::::- ").split()]
    passages = passages_of(page)

    assert [p[0] for p in passages] == [f"4366-{n}" for n in range(len(passages))]
    assert all(title == "Scott Derrickson" for _, title, *_ in passages)
    assert [len(text.split()) for _, _, text, *_ in passages] == [
        min(WORDS, len(words) - start) for start in range(0, len(words), WORDS)]
    assert " ".join(text for _, _, text, *_ in passages) == " ".join(words)  # nothing lost
    assert "::::" not in " ".join(text for _, _, text, *_ in passages)
    assert passages[0][3] == 1  # paragraph 0 is the title, never text
    spans = [(start, end) for *_, start, end in passages]
    assert all(a <= b for a, b in spans) and spans[-1][1] == len(page["text"]) - 1
    assert all(later[0] >= earlier[1] for earlier, later in pairwise(spans))


def test_provenance_maps_onto_the_passages_overlapping_its_paragraphs(tmp_path):
    page, other = _page(), {**_page(), "wikipedia_id": "77", "wikipedia_title": "Other"}
    corpus = Corpus.stored("test-kilt-w100", lambda: cut([page, other]), cache_dir=tmp_path)
    passages = passages_of(page)

    last = len(page["text"]) - 1
    assert corpus.gold_pids("4366", last, last) == [passages[-1][0]]
    assert corpus.gold_pids("4366", 1, last) == [p[0] for p in passages]
    assert corpus.gold_pids("4366", last + 5, last + 9) == []  # past the page's end
    assert corpus.gold_pids("77", 1, 1) == ["77-0"]  # the next page's rows are not 4366's
    assert corpus.gold_pids("999", 1, 1) == []


def test_a_failed_download_names_kilt_w100_not_the_corpus_it_is_cut_from(monkeypatch):
    monkeypatch.setenv("LABELER_KILT_SOURCE", "https://mirror.example/kilt_knowledgesource.json")

    with pytest.raises(HubError) as failed:  # offline (conftest) with nothing in the cache
        load_kilt_w100()

    assert failed.value.message.startswith(
        "cannot load corpus 'kilt-w100': https://mirror.example/kilt_knowledgesource.json is not "
        "in the local cache")


@pytest.mark.parametrize(("source", "says"), [
    ("https://mirror.example/kilt_knowledgesource.json",
     "downloads KILT's Wikipedia (34.76 GiB, https://mirror.example/kilt_knowledgesource.json)"),
    ("/data/kilt_knowledgesource.json",
     "reads KILT's Wikipedia (34.76 GiB, /data/kilt_knowledgesource.json)")])
def test_the_first_use_notice_names_the_source_actually_used(source, says, monkeypatch,
                                                            tmp_path, capsys):
    monkeypatch.setenv("LABELER_KILT_SOURCE", source)
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(variable)
    monkeypatch.setattr("labeler.sources.kilt_w100.Corpus.stored", lambda *a, **k: None)

    load_kilt_w100()

    assert f"kilt-w100: the first use {says}" in " ".join(capsys.readouterr().err.split())


def test_a_provenance_naming_only_the_title_maps_onto_no_passage_and_is_counted(tmp_path):
    """Paragraph 0 is the page's title: kilt-w100 holds it as every passage's title and in no
    passage's text, so a provenance of it alone names no passage (taking the first one would
    make its 100 words gold though no annotator pointed at them); the corpus's gold count
    says how many such references went unmapped."""
    page = _page()
    corpus = Corpus.stored("test-kilt-w100", lambda: cut([page]), cache_dir=tmp_path)
    title, text = GoldRef("4366", "Scott Derrickson", 0, 0), GoldRef("4366", "Scott Derrickson",
                                                                      0, 2)
    queries = [Query("q1", "Who is Scott Derrickson?", ["a director"], gold_refs=[title]),
               Query("q2", "What does he direct?", ["horror"], gold_refs=[title, text])]
    for query in queries:  # as load_source does: the passages the references name are gold
        query.gold = [corpus[pid] for ref in query.gold_refs for pid in ref.pids_in(corpus)]
    source = Source("kilt-test", "r", queries, corpus)

    assert title.pids_in(corpus) == [] and text.pids_in(corpus) == ["4366-0"]
    assert source.gold_in_corpus() == {"gold": 3, "in_corpus": 1, "queries_with_gold": 2,
                                       "queries_with_gold_in_corpus": 1, "title_only": 2}
