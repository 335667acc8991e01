"""Each Hub adapter on real fixture records, through the same code path a Hub load takes.

`datasets.load_dataset` is pointed at the local fixture (the `json`/`parquet` builders)
instead of the Hub; everything after the loading call is the production path.
"""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest

from labeler.errors import HubError, InputError
from labeler.sources import SOURCES, Source, load_source, msmarco

FIXTURES = Path(__file__).parent.parent / "fixtures"

#: dataset name -> (Hub id, config, split it must ask for, local fixture standing in for it)
HUB_LOADS = {
    "nq": ("Tevatron/wikipedia-nq", None, "dev", "tevatron_nq_dev.jsonl"),
    # no TriviaQA record is available offline: the NQ rows stand in (same Tevatron layout)
    "tq": ("Tevatron/wikipedia-trivia", None, "dev", "tevatron_nq_dev.jsonl"),
    "msmarco-fqa": ("microsoft/ms_marco", "v1.1", "validation", "ms_marco_v1.1_dev.parquet"),
    "hotpotqa": ("hotpotqa/hotpot_qa", "distractor", "validation", "hotpot_dev_distractor.json"),
    "fever": ("facebook/kilt_tasks", "fever", "validation", "kilt_fever_dev.jsonl"),
    "2wiki": ("RUC-NLPIR/FlashRAG_datasets", None, "dev", "flashrag_nq_test.jsonl"),
}


@pytest.fixture
def hub_from_fixtures(monkeypatch):
    """Serve each Hub id from its fixture with the real json/parquet builders; record calls."""
    real = datasets.load_dataset
    calls = []

    def load_dataset(path, name=None, *, split, **kwargs):
        calls.append((path, name, split))
        for repo, config, _, fixture in HUB_LOADS.values():
            if (path, name) == (repo, config):
                builder = "parquet" if fixture.endswith(".parquet") else "json"
                return real(builder, data_files={split: str(FIXTURES / fixture)}, split=split)
        raise AssertionError(f"unexpected Hub load {path} {name}")

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


@pytest.mark.parametrize("name", list(HUB_LOADS))
def test_adapter_asks_the_hub_for_its_dataset_and_pins_a_revision(name, hub_from_fixtures):
    source = load_source(name)
    repo, config, split, _ = HUB_LOADS[name]
    assert hub_from_fixtures == [(repo, config, split)]
    assert source.name == name
    assert source.revision.startswith("fingerprint:")  # offline: the data's own fingerprint


#: dataset name -> the licence its authors release it under (Hub licence id), and where it says so
LICENSES = {
    "nq-sample": "cc-by-sa-3.0",  # labeler/data/nq_sample/LICENSE
    "nq": "cc-by-sa-3.0",  # Natural Questions (google-research-datasets/natural-questions)
    "tq": "apache-2.0",  # TriviaQA README: Apache 2.0 "applies to both the code and the data"
    "msmarco-fqa": "other",  # MS MARCO's terms: non-commercial research use only
    "hotpotqa": "cc-by-sa-4.0",  # HotpotQA: "distributed under a CC BY-SA 4.0 License"
    "fever": "cc-by-sa-3.0",  # the FEVER licence: Wikipedia's terms, else CC BY-SA 3.0
    "2wiki": "apache-2.0",  # Alab-NII/2wikimultihop LICENSE
}


@pytest.mark.parametrize("name", list(SOURCES))
def test_each_source_declares_its_own_licence(name, hub_from_fixtures):
    assert load_source(name, limit=1).license == LICENSES[name]


def test_a_licence_must_be_a_hub_licence_id():
    with pytest.raises(InputError) as error:
        Source("x", "r", [], None, license="CC BY-SA 4.0")
    assert error.value.line() == (
        "field 'license': licence 'CC BY-SA 4.0' is not a Hugging Face Hub licence id "
        "(use one like cc-by-sa-4.0, apache-2.0, mit, other or unknown)")


def test_nq_positive_passages_are_the_gold_and_the_corpus_pools_all(hub_from_fixtures):
    source = load_source("nq")
    first = source.queries[0]
    assert (first.qid, first.question, first.answers) == (
        "0", "who sings does he love me with reba", ["Linda Davis"])
    # DPR lists passage 11828866 twice among the positives: kept once
    assert [p.pid for p in first.gold] == ["11828866", "15632586", "8870096", "7626265"]
    assert first.gold[0].title == "Does He Love You"
    assert "Linda Davis" in first.gold[0].text
    assert len(source.corpus) == 4 + 3 + 5 + 3  # gold + 3 hard negatives, per query
    assert all(p.pid in source.corpus for q in source.queries for p in q.gold)


def test_hotpotqa_supporting_paragraphs_are_the_gold(hub_from_fixtures):
    source = load_source("hotpotqa", limit=2)
    first, second = source.queries
    assert first.qid == "5a8b57f25542995d1e6f1371" and first.answers == ["yes"]
    assert [p.pid for p in first.gold] == ["Scott_Derrickson", "Ed_Wood"]
    assert first.gold[0].text.startswith("Scott Derrickson (born July 16, 1966) is an American")
    assert second.answers == ["Chief of Protocol"]
    assert [p.title for p in second.gold] == ["Kiss and Tell (1945 film)", "Shirley Temple"]
    assert len(source.corpus) == 20  # the 10 distractor-setting paragraphs of each query


def test_fever_has_verdicts_and_no_gold_or_corpus(hub_from_fixtures):
    source = load_source("fever")
    assert [(q.qid, q.answers) for q in source.queries[:2]] == [
        ("137334", ["SUPPORTS"]), ("111897", ["REFUTES"])]  # 111897 lists REFUTES twice
    assert source.queries[0].question == "Fox 2000 Pictures released the film Soul Food."
    assert all(not q.gold for q in source.queries) and source.corpus is None


def test_2wiki_reads_flashrag_rows(hub_from_fixtures):
    # no 2WikiMultihopQA record is available offline: real FlashRAG-format NQ rows stand in
    source = load_source("2wiki")
    assert len(source.queries) == 17
    assert source.queries[2].answers == ["Olivia", "MFSK"]
    assert source.corpus is None


def test_msmarco_keeps_only_factoid_queries(hub_from_fixtures):
    # the one real dummy record is a "description" query: not factoid
    assert load_source("msmarco-fqa").queries == []


@pytest.mark.parametrize("fixture", ["ms_marco_v1.1_dev.json", "ms_marco_v1.1_dev.parquet"])
def test_msmarco_selected_passages_are_the_gold_in_either_arrow_layout(fixture):
    builder = "parquet" if fixture.endswith(".parquet") else "json"
    rows = datasets.load_dataset(builder, data_files=str(FIXTURES / fixture), split="train")
    source = msmarco.from_dataset(rows, name="msmarco", revision="r", query_types=("DESCRIPTION",))
    (query,) = source.queries
    assert (query.qid, query.question, query.answers) == (
        "0", "does human hair stop squirrels", ["Yes"])
    assert [p.pid for p in query.gold] == ["0_2"]
    assert query.gold[0].text.startswith("Spread some human hair around your vegetable")
    assert len(source.corpus) == 7


def test_hub_failure_is_one_clear_error():
    with pytest.raises(HubError) as error:
        load_source("tq")  # offline, nothing cached
    assert str(error.value).startswith("Tevatron/wikipedia-trivia: cannot load dataset: ")
