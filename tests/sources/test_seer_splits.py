"""SEER's training splits (`nq-open-train`, `tq-train`, `hotpotqa-train`) and its NQ and
TriviaQA tests (`nq-open-test`, `tq-test`) read from the Hub mirror's real repo ids and paths
(FlashRAG_datasets' nq/ and triviaqa/ train.jsonl and test.jsonl, KILT's hotpotqa train parquet), and NQ-open's at-most-5-token answers. The served rows are real
NQ, TriviaQA and HotpotQA records (tests/fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

import datasets

from labeler.sources import kilt
from labeler.sources.hub_files import HUB_FILES
from labeler.sources.nq_open import short_answers
from labeler.sources.registry import load_source
from labeler.sources.types import Query

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_nq_open_train_drops_answers_over_five_words(hub_from_fixtures):
    source = load_source("nq-open-train")
    assert (source.name, source.license) == ("nq-open-train", "cc-by-sa-3.0")
    assert source.revision.startswith(HUB_FILES["nq-open-train"].revision + "+corpus:kilt-w100")
    # 6 served questions, 9 answers: one answer of 6 words goes, no question goes with it
    assert len(source.queries) == 6
    assert sum(len(q.answers) for q in source.queries) == 8
    assert source.queries[-1].question == "who was running as vice president in 1984"
    assert source.queries[-1].answers == ["George H. W. Bush", "Ferraro", "Congresswoman Ferraro"]
    # NQ-open writes answers as NQ tokens joined by spaces: 4 tokens, kept
    assert source.queries[4].answers == ["March 30 , 2018"]


def test_seers_nq_and_triviaqa_tests_are_flashrags_test_files(hub_from_fixtures):
    nq, tq = load_source("nq-open-test"), load_source("tq-test")
    assert (HUB_FILES["nq-open-test"].files, HUB_FILES["tq-test"].files) == \
        (("nq/test.jsonl",), ("triviaqa/test.jsonl",))
    assert HUB_FILES["nq-open-test"].revision == HUB_FILES["nq-open-train"].revision
    assert (nq.license, tq.license) == ("cc-by-sa-3.0", "apache-2.0")
    assert [q.qid for q in nq.queries] == ["test_0", "test_1", "test_2"]
    assert nq.queries[0].answers == ["Wilhelm Conrad Röntgen"]
    assert [q.qid for q in tq.queries] == ["tc_33"] and "Sunset Boulevard" in tq.queries[0].answers


def test_a_question_left_without_answers_is_dropped():
    # real KILT NQ dev answers (tests/fixtures/kilt_nq_dev.jsonl): 5 words stay, 17 go
    five = "the coast of northern California"
    seventeen = ("the therefore sign ( ∴ ) is generally used before a logical consequence , "
                 "such as the conclusion of a syllogism")
    assert short_answers(Query("q1", "where are the giant redwoods located in california",
                               [five])).answers == [five]
    assert short_answers(Query("q2", "what do the 3 dots mean in math", [seventeen])) is None


def test_limit_counts_the_questions_kept(hub_from_fixtures):
    assert [q.qid for q in load_source("nq-open-train", limit=2).queries] == [
        "5328212470870865242", "5289242154789678439"]
    assert [q.qid for q in load_source("hotpotqa-train", limit=2).queries] == [
        "5a7a06935542990198eaf050", "5a879ab05542996e4f30887e"]


def test_tq_train_reads_flashrag_rows(hub_from_fixtures):
    source = load_source("tq-train")
    assert [q.qid for q in source.queries] == ["tc_3", "tc_33"]
    assert source.license == "apache-2.0"  # TriviaQA's, not the collection card's cc-by-sa-4.0
    assert "York" in source.queries[0].answers
    assert source.corpus.name == "kilt-w100"


def test_hotpotqa_train_keeps_records_without_provenance(hub_from_fixtures):
    source = load_source("hotpotqa-train")
    # all 5 served records, as SEER's 88.9k counts all of KILT's train; 2 have no provenance
    assert [len(q.gold_refs) for q in source.queries] == [2, 0, 2, 2, 0]
    assert source.queries[1].answers == ["Delhi"]
    assert (source.license, source.corpus.name) == ("cc-by-sa-4.0", "kilt-w100")
    # the dev sets' filter (provenance required) would have kept 3
    rows = datasets.load_dataset("json", split="train",
                                 data_files=str(FIXTURES / "kilt_hotpotqa_train.jsonl"))
    assert len(kilt.from_dataset(rows, name="x", revision="r").queries) == 3

