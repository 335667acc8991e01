"""Each Hub adapter on real fixture records, read from the Hub mirror (tests/support/hub_mirror.py)
through the tests' Hub server: the production path, nothing patched."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

from labeler.errors import InputError
from labeler.sources import kilt, msmarco
from labeler.sources.registry import SOURCES, load_source
from labeler.sources.types import GoldRef, Source

FIXTURES = Path(__file__).parent.parent / "fixtures"

#: dataset name -> the licence its authors release it under (Hub licence id), and where it says so
LICENSES = {
    "nq-sample": "cc-by-sa-3.0",  # labeler/data/nq_sample/LICENSE
    "nq": "cc-by-sa-3.0",  # Natural Questions (google-research-datasets/natural-questions)
    "tq": "apache-2.0",  # TriviaQA README: Apache 2.0 "applies to both the code and the data"
    "msmarco-fqa": "other",  # MS MARCO's terms: non-commercial research use only
    "hotpotqa": "cc-by-sa-4.0",  # HotpotQA: "distributed under a CC BY-SA 4.0 License"
    "fever": "cc-by-sa-3.0",  # the FEVER licence: Wikipedia's terms, else CC BY-SA 3.0
    "2wiki": "apache-2.0",  # Alab-NII/2wikimultihop LICENSE
    "nq-tevatron": "cc-by-sa-3.0",
    "tq-tevatron-distant": "apache-2.0",
    "hotpotqa-distractor": "cc-by-sa-4.0",
    "nq-open-train": "cc-by-sa-3.0",
    "tq-train": "apache-2.0",
    "hotpotqa-train": "cc-by-sa-4.0",
    "cisi-sample": "unknown",  # CISI states no licence (labeler/data/cisi_sample/LICENSE)
    "wands": "mit",  # wayfair/WANDS LICENSE
    "esci": "apache-2.0",  # amazon-science/esci-data LICENSE
}


@pytest.mark.parametrize("name", list(SOURCES))
def test_each_source_declares_its_own_licence(name, hub_from_fixtures):
    assert load_source(name, limit=1).license == LICENSES[name]


#: the Hub dataset repos each source reads (a card's source_datasets); the bundled samples none
REPOS = {
    "nq-sample": [], "cisi-sample": [],
    "nq": ["facebook/kilt_tasks"], "hotpotqa": ["facebook/kilt_tasks"],
    "fever": ["facebook/kilt_tasks"], "hotpotqa-train": ["facebook/kilt_tasks"],
    "tq": ["facebook/kilt_tasks", "mandarjoshi/trivia_qa"],  # questions joined by id
    "msmarco-fqa": ["microsoft/ms_marco"],
    "2wiki": ["RUC-NLPIR/FlashRAG_datasets"], "nq-open-train": ["RUC-NLPIR/FlashRAG_datasets"],
    "tq-train": ["RUC-NLPIR/FlashRAG_datasets"],
    "nq-tevatron": ["Tevatron/wikipedia-nq"], "tq-tevatron-distant": ["Tevatron/wikipedia-trivia"],
    "hotpotqa-distractor": ["hotpotqa/hotpot_qa"],
    "wands": [], "esci": [],  # GitHub repos, not the Hub's (docs/building.md, "GitHub sources")
}


@pytest.mark.parametrize("name", list(SOURCES))
def test_each_source_says_its_language_and_the_hub_repos_it_read(name, hub_from_fixtures):
    described = load_source(name, limit=1).describe()
    language = None if name == "esci" else "en"  # ESCI: English, Spanish and Japanese queries
    assert (described["language"], described["source_repos"]) == (language, REPOS[name])


def test_a_users_file_has_no_language_said(tmp_path):
    file = tmp_path / "dev.jsonl"
    file.write_text('{"id": "1", "question": "who?", "golden_answers": ["me"]}\n')
    described = load_source(f"jsonl:{file}").describe()
    assert (described["language"], described["source_repos"]) == (None, [])


def test_a_licence_must_be_a_hub_licence_id():
    with pytest.raises(InputError) as error:
        Source("x", "r", [], None, license="CC BY-SA 4.0")
    assert error.value.line() == (
        "field 'license': licence 'CC BY-SA 4.0' is not a Hugging Face Hub licence id "
        "(use one like cc-by-sa-4.0, apache-2.0, mit, other or unknown)")


def test_nq_positive_passages_are_the_gold_and_the_corpus_pools_all(hub_from_fixtures):
    source = load_source("nq-tevatron")
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
    source = load_source("hotpotqa-distractor", limit=2)
    first, second = source.queries
    assert first.qid == "5a8b57f25542995d1e6f1371" and first.answers == ["yes"]
    assert [p.pid for p in first.gold] == ["Scott_Derrickson", "Ed_Wood"]
    assert first.gold[0].text.startswith("Scott Derrickson (born July 16, 1966) is an American")
    assert second.answers == ["Chief of Protocol"]
    assert [p.title for p in second.gold] == ["Kiss and Tell (1945 film)", "Shirley Temple"]
    assert len(source.corpus) == 30  # the 10 distractor paragraphs of each of the 3 rows


@pytest.mark.parametrize("name", ["nq-tevatron", "hotpotqa-distractor"])
def test_a_source_corpus_is_the_whole_split_whatever_the_limit(hub_from_fixtures, name):
    # pools retrieved from it must not change with --limit
    one, every = load_source(name, limit=1), load_source(name)
    assert len(one.queries) == 1 < len(every.queries)
    assert one.corpus.fingerprint == every.corpus.fingerprint


def test_fever_claims_have_verdicts_and_provenance_references(hub_from_fixtures):
    source = load_source("fever")
    assert source.kind == "claim"
    assert [(q.qid, q.answers) for q in source.queries[:2]] == [
        ("137334", ["SUPPORTS"]), ("111897", ["REFUTES"])]  # 111897 lists REFUTES twice
    first = source.queries[0]
    assert first.question == "Fox 2000 Pictures released the film Soul Food."
    assert first.gold_refs == [GoldRef("1073955", "Soul Food (film)", 1, 1)]
    # 105095: two verdicts whose provenance repeats paragraphs; each reference kept once
    assert [(r.title, r.start_paragraph_id) for r in source.queries[4].gold_refs] == [
        ("Nicholas Brody", 1), ("Carrie Mathison", 1)]
    assert source.corpus.name == "kilt-w100"  # the paper's corpus, by default


def test_kilt_nq_answers_and_provenance_references(hub_from_fixtures):
    source = load_source("nq")
    assert (source.kind, source.corpus.name, len(source.queries)) == ("question", "kilt-w100", 5)
    first = source.queries[0]
    assert (first.qid, first.question) == ("6915606477668963399",
                                           "what do the 3 dots mean in math")
    # four answers; the two outputs without one (long-answer annotations) add provenance only
    assert first.answers == ["the therefore sign", "therefore sign",
                             "a logical consequence , such as the conclusion of a syllogism",
                             ("the therefore sign ( \u2234 ) is generally used before a "
                              "logical consequence , such as the conclusion of a syllogism")]
    assert first.gold_refs == [GoldRef("10593264", "Therefore sign", 1, 1)]
    # KILT provenance holds no text: its gold is the kilt-w100 passage over paragraph 1
    assert [p.pid for p in first.gold] == ["10593264-0"]
    # 7217222058435937287: an output with neither answer nor provenance adds nothing
    assert source.queries[3].answers[0] == "Davos" and None not in source.queries[3].answers
    assert [(r.title, r.start_paragraph_id) for r in source.queries[3].gold_refs] == [
        ("World Economic Forum", 2), ("World Economic Forum", 12), ("World Social Forum", 1)]


def test_kilt_records_without_answer_or_provenance_are_left_out():
    # the KILT NQ test records: real, with a question but no output at all
    test = datasets.load_dataset("json", split="train", data_files=str(
        FIXTURES / "kilt_nq_test_without_answers.jsonl"))
    assert len(test) == 5
    assert kilt.from_dataset(test, name="nq", revision="r").queries == []
    dev = datasets.load_dataset("json", split="train",
                                data_files=str(FIXTURES / "kilt_nq_dev.jsonl"))
    first = dev[0]
    no_provenance = {**first, "output": [{"answer": o.get("answer")} for o in first["output"]]}
    assert kilt.query_from_record(no_provenance) is None
    assert kilt.query_from_record(first).qid == "6915606477668963399"
    # the limit counts kept records, after the filter
    assert [q.qid for q in kilt.from_dataset(dev, name="nq", revision="r", limit=2).queries] == [
        "6915606477668963399", "-8366545547296627039"]


def test_kilt_hotpotqa_gold_references_both_supporting_pages(hub_from_fixtures):
    source = load_source("hotpotqa")
    first = source.queries[0]
    assert (first.qid, first.answers) == ("5a8b57f25542995d1e6f1371", ["yes"])
    assert first.gold_refs == [GoldRef("2816539", "Scott Derrickson", 1, 1),
                               GoldRef("10520", "Ed Wood", 1, 1)]
    assert [len(q.gold_refs) for q in source.queries] == [2, 2, 2, 2, 2]


def test_kilt_triviaqa_takes_its_questions_from_triviaqa_by_id(hub_from_fixtures):
    # KILT ships TriviaQA without questions; the one TriviaQA dev record here (tc_33) is not
    # among the five KILT dev ids, so no record has a question and none is kept
    source = load_source("tq")
    assert source.queries == []
    assert "+mandarjoshi/trivia_qa:" in source.revision  # both datasets pinned
    # with the question of its id, a KILT record is kept; the text here is a placeholder (no
    # offline TriviaQA record has a KILT id), the answers and provenance are KILT's
    row = datasets.load_dataset("json", split="train",
                                data_files=str(FIXTURES / "kilt_triviaqa_dev.jsonl"))[0]
    query = kilt.query_from_record(row, {"sfq_17752": "<the question of sfq_17752>"})
    assert (query.qid, query.question) == ("sfq_17752", "<the question of sfq_17752>")
    assert query.answers == ["Jim Laker", "jim laker", "JIM LAKER", "james laker",
                             "James Laker"]
    assert query.gold_refs == [GoldRef("2047389", "Bowling analysis", 4, 4)]


def test_a_kilt_paragraph_corpus_turns_references_into_gold_passages(hub_from_fixtures,
                                                                        tmp_path):
    # a corpus holding KILT paragraphs under <wikipedia_id>_<paragraph>: only the pid matters
    # here, the text is a placeholder
    corpus = tmp_path / "kilt_paragraphs.jsonl"
    corpus.write_text("".join(
        json.dumps({"id": f"1073955_{i}", "contents": f"Soul Food (film)\n<paragraph {i}>"})
        + "\n" for i in (1, 2)))
    source = load_source("fever", corpus=corpus, limit=2)
    first, second = source.queries
    assert [p.pid for p in first.gold] == ["1073955_1"]
    assert second.gold == []  # Telemundo's paragraphs are not in this corpus


def test_kilt_gold_without_a_corpus_says_how_to_resolve_it(hub_from_fixtures):
    from labeler.retrieval import build_pools

    with pytest.raises(InputError) as error:
        build_pools(load_source("fever"), pool="mcp")
    assert error.value.line() == (
        "field 'pool': dataset 'fever' has no human gold passages (its gold is KILT provenance "
        "without text: pass --corpus with KILT paragraphs as <wikipedia_id>_<paragraph>, or use "
        "--pool rp)")


def test_kilt_outputs_in_the_struct_of_lists_layout_read_the_same():
    # the other Arrow layout of a list of structs (a `Sequence` feature): parallel lists
    row = datasets.load_dataset("json", split="train",
                                data_files=str(FIXTURES / "kilt_fever_dev.jsonl"))[4]
    outputs = row["output"]
    provenance = [{key: [p[key] for p in o["provenance"]] for key in o["provenance"][0]}
                  for o in outputs]
    columnar = {**row, "output": {"answer": [o["answer"] for o in outputs],
                                  "provenance": provenance}}
    assert kilt.query_from_record(columnar) == kilt.query_from_record(row)


def test_2wiki_reads_flashrag_rows(hub_from_fixtures):
    source = load_source("2wiki")  # two real 2WikiMultihopQA dev questions (fixtures/README)
    assert [q.answers for q in source.queries] == [["The Mask Of Fu Manchu"], ["no"]]
    assert source.corpus.name == "kilt-w100"


def test_msmarco_keeps_only_factoid_queries(hub_from_fixtures):
    # the one real dummy record is a "description" query: not factoid
    source = load_source("msmarco-fqa")
    assert source.queries == []
    assert source.sentence_answers  # labelling needs --answer-extractor


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


def test_an_esci_sample_is_drawn_in_arrow_as_the_experiment_draws_it(hub_from_fixtures):
    """The rubric's --sample on ESCI (130k queries, 2.6M judgments) makes Python objects of
    the sampled queries only: the same queries, in the same order, as drawing from them all."""
    from labeler.sources.sampling import seeded_sample

    def shown(source):
        return [(q.qid, q.question, q.relevance, [p.pid for p in q.gold]) for q in source.queries]

    every = load_source("esci")
    for n, seed in ((2, 42), (2, 7), (1, 42), (1, 3)):
        sampled = load_source("esci", sample=(n, seed))
        assert shown(sampled) == shown(seeded_sample(every, n, seed)), (n, seed)
        assert seeded_sample(sampled, n, seed) is sampled  # the task's select keeps the draw
    with pytest.raises(InputError, match="cannot sample 3 of 2 queries"):
        load_source("esci", sample=(3, 42))
