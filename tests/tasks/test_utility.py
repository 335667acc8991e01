"""Label logic and statistics of the utility task, with the scripted backend (arithmetic only).

Queries and passages are real: two NQ-open questions with their human gold chunk from
../shared/data/nq_oracle (nelson-liu/lost-in-the-middle, qa_data/nq-open-oracle.jsonl.gz,
records 1 and 2; CC BY-SA 3.0) and one DPR-wiki passage as a distractor from
../shared/data/wiki_passages/sample_data.jsonl (RUC-NLPIR/FlashRAG, id "0", text shortened).
"""

from __future__ import annotations

import pytest
from support.scripted import ScriptedBackend

from labeler.retrieval import Candidate
from labeler.sources.passage import Passage
from labeler.sources.types import Query
from labeler.tasks import utility, utility_setting
from labeler.tasks.base import Shard
from labeler.tasks.utility import UtilityConfig, UtilityTask

NOBEL_GOLD = Passage(
    "nq-oracle-0", "List of Nobel laureates in Physics",
    "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen, of Germany, "
    "who received 150,782 SEK, which is equal to 7,731,004 SEK in December 2007.",
)
DEADPOOL_GOLD = Passage(
    "nq-oracle-1", "Deadpool 2",
    "Deadpool 2 is scheduled to be released in the United States on May 18, 2018.  A sequel, "
    "Deadpool 3, is in development.",
)
DISTRACTOR = Passage(
    "wiki-0", "Evan Morris",
    "Evan Morris Evan L. Morris (January 26, 1977 – July 9, 2015) was a lobbyist for Genentech "
    "and its parent corporation Roche in Washington, D.C.",
)
NOBEL = Query("q-nobel", "who got the first nobel prize in physics", ["Wilhelm Conrad Röntgen"],
              [NOBEL_GOLD])
DEADPOOL = Query("q-deadpool", "when is the next deadpool movie being released", ["May 18, 2018"],
                 [DEADPOOL_GOLD])
POOLS = {
    # gold first, distractor second, as a retriever might rank them
    "q-nobel": [Candidate(NOBEL_GOLD, "retrieved", 1, gold=True),
                Candidate(DISTRACTOR, "retrieved", 2)],
    "q-deadpool": [Candidate(DEADPOOL_GOLD, "retrieved", 1, gold=True),
                   Candidate(DISTRACTOR, "retrieved", 2)],
}


def _answer(text: str) -> str:
    """Closed-book: wrong on the Nobel question, right on Deadpool (a "known" query). With
    evidence: the distractor, when present, wins; otherwise the answer in the evidence."""
    if not text.startswith("Information:"):
        answer = "Albert Einstein" if "nobel" in text else "May 18, 2018"
    else:
        evidence = text.split("\n Answer the following")[0]
        answer = next((answer for needle, answer in (
            ("Evan Morris", "Evan Morris"), ("Röntgen", "Wilhelm Conrad Röntgen"),
            ("May 18, 2018", "It is May 18, 2018")) if needle in evidence), "unknown")
    return " " + answer + "\n"


def _label(llm: ScriptedBackend, **options) -> list[dict]:
    task = UtilityTask(UtilityConfig(dataset="nq-sample", **options))
    return task.label(task.calls(llm), Shard(0, (NOBEL, DEADPOOL), POOLS))


@pytest.fixture
def labelled():
    llm = ScriptedBackend(answer=_answer)
    return llm, _label(llm)


def test_prompts_are_the_papers_verbatim():
    assert utility.closed_book_prompt("who wrote hamlet")[-1].content == (
        "Answer the following question based on your internal knowledge with one or few words "
        "without the explanation. Question: who wrote hamlet\n\n Answer:"
    )
    assert utility.passage_prompt("who wrote hamlet", [DISTRACTOR])[-1].content == (
        "Information: \nEvan Morris " + DISTRACTOR.text + "\n Answer the following question "
        "based on the given information or your internal knowledge  with one or few words "
        "without the source.\n Question: who wrote hamlet\n\n Answer:"
    )


def test_known_query_gets_no_utility_even_from_a_correct_passage(labelled):
    _, records = labelled
    deadpool = records[1]
    assert deadpool["known"] is True
    assert deadpool["closed_book_answer"] == "May 18, 2018"
    assert [c["correct"] for c in deadpool["candidates"]] == [True, False]
    assert [c["utility"] for c in deadpool["candidates"]] == [0, 0]
    assert deadpool["utility_pids"] == []


def test_a_correctness_flip_makes_a_passage_utilitarian(labelled):
    _, records = labelled
    nobel = records[0]
    assert nobel["known"] is False
    assert [(c["pid"], c["answer"], c["correct"], c["utility"]) for c in nobel["candidates"]] == [
        ("nq-oracle-0", "Wilhelm Conrad Röntgen", True, 1),
        ("wiki-0", "Evan Morris", False, 0),
    ]
    assert nobel["utility_pids"] == ["nq-oracle-0"]
    assert {k: nobel[k] for k in ("qid", "llm", "pool")} == {
        "qid": "q-nobel", "llm": "scripted", "pool": "rp"}
    assert nobel["candidates"][0]["source"] == "retrieved" and nobel["candidates"][0]["rank"] == 1


def test_one_generate_call_holds_every_kind_and_no_prompt_asked_twice(labelled):
    llm, _ = labelled
    # closed-book (2 queries), one passage (4 pairs), all candidates (2 queries) in one call,
    # so the backend refills its running batch from one queue; the utilitarian and human-gold
    # prompts repeat one-passage or closed-book prompts: not resent.
    batches = llm.batches("generate")
    assert [len(b) for b in batches] == [8]
    assert batches[0][:2] == [utility.closed_book_prompt(q.question) for q in (NOBEL, DEADPOOL)]
    assert batches[0][2:6] == [utility.passage_prompt(q.question, [c.passage])
                               for q in (NOBEL, DEADPOOL) for c in POOLS[q.qid]]
    assert batches[0][6] == utility.passage_prompt(NOBEL.question, [NOBEL_GOLD, DISTRACTOR])
    assert llm.batches("loglikelihood") == []


def test_utilitarian_answers_follow_in_a_second_call_when_they_are_new():
    nobel = Query(NOBEL.qid, NOBEL.question, NOBEL.answers, [NOBEL_GOLD, DEADPOOL_GOLD])
    llm = ScriptedBackend(answer=lambda text: " Wilhelm Conrad Röntgen\n"
                          if "Röntgen" in text else " unknown\n")
    task = UtilityTask(UtilityConfig(dataset="nq-sample"))
    pool = [Candidate(NOBEL_GOLD, "retrieved", 1, gold=True),
            Candidate(DEADPOOL_GOLD, "retrieved", 2, gold=True),
            Candidate(DISTRACTOR, "retrieved", 3)]
    (record,) = task.label(task.calls(llm), Shard(0, (nobel,), {nobel.qid: pool}))
    # closed-book, 3 one-passage, all 3 passages, both gold passages; then the one utilitarian
    # passage alone, which is already asked: one call in all
    assert [len(b) for b in llm.batches("generate")] == [6]
    assert record["utility_pids"] == ["nq-oracle-0"]
    assert record["rag"]["human_gold"]["correct"] is True
    assert record["rag"]["utilitarian"]["answer"] == "Wilhelm Conrad Röntgen"


def test_records_keep_the_rag_answers_their_statistics_need(labelled):
    _, (nobel, deadpool) = labelled
    assert [c["gold"] for c in nobel["candidates"]] == [True, False]
    assert nobel["rag"] == {
        "all": {"answer": "Evan Morris", "capped": False, "correct": False},  # misled
        "utilitarian": {"answer": "Wilhelm Conrad Röntgen", "capped": False, "correct": True},
        "human_gold": {"answer": "Wilhelm Conrad Röntgen", "capped": False, "correct": True},
    }
    # known: no utilitarian passage, so it is asked closed-book again (and right)
    assert deadpool["rag"]["utilitarian"] == {"answer": "May 18, 2018", "capped": False,
                                              "correct": True}


def test_statistics_of_the_build(labelled):
    _, records = labelled
    assert UtilityTask.statistics(records) == {
        "queries": 2,
        "candidates": 4,
        "answers": 12,  # 2 closed-book + 4 one-passage + 2 x (all, utilitarian, human gold)
        "capped_answers": 0,
        "capped_closed_book": 0,
        "known_share": 0.5,  # Deadpool only
        "mean_utilitarian": 0.5,  # (1 + 0) / 2
        "utilitarian_query_share": 0.5,
        "human_gold_in_pool": 2,
        "human_gold_utilitarian_share": 0.5,  # Nobel gold yes, Deadpool gold no (known)
        "accuracy_no_passage": 0.5,
        "accuracy_all": 0.0,  # the distractor misleads both
        "accuracy_utilitarian": 1.0,  # Nobel with its gold; Deadpool with no passage
        "human_gold_queries": 2,
        "accuracy_human_gold": 1.0,
    }


def _rag(all_: bool, useful: bool, gold: bool | None, capped: bool = False) -> dict:
    return {"all": {"answer": "a", "capped": capped, "correct": all_},
            "utilitarian": {"answer": "u", "capped": False, "correct": useful},
            "human_gold": None if gold is None else {"answer": "g", "capped": False,
                                                     "correct": gold}}


def test_statistics_arithmetic_from_records_alone():
    # three queries, five candidates, two of them human gold; one query without human gold
    # answers cut at the cap: a's second candidate, b's closed-book and its `rag.all`
    records = [
        {"qid": "a", "known": False, "utility_pids": ["p1", "p2"], "rag": _rag(True, True, True),
         "closed_book_capped": False,
         "candidates": [{"pid": "p1", "utility": 1, "gold": True, "capped": False},
                        {"pid": "p2", "utility": 1, "gold": False, "capped": True},
                        {"pid": "p3", "utility": 0, "gold": False, "capped": False}]},
        {"qid": "b", "known": False, "utility_pids": [], "closed_book_capped": True,
         "rag": _rag(False, False, False, capped=True),
         "candidates": [{"pid": "p1", "utility": 0, "gold": True, "capped": False}]},
        {"qid": "c", "known": True, "utility_pids": [], "rag": _rag(True, True, None),
         "closed_book_capped": False,
         "candidates": [{"pid": "p4", "utility": 0, "gold": False, "capped": False}]},
    ]
    stats = UtilityTask.statistics(records)
    # a: 1 + 3 + 3 answers, b: 1 + 1 + 3, c: 1 + 1 + 2 (no human gold)
    assert (stats["answers"], stats["capped_answers"], stats["capped_closed_book"]) == (16, 3, 1)
    assert stats["known_share"] == stats["accuracy_no_passage"] == pytest.approx(1 / 3)
    assert stats["mean_utilitarian"] == pytest.approx(2 / 3)
    assert stats["utilitarian_query_share"] == pytest.approx(1 / 3)
    assert stats["candidates"] == 5
    assert stats["accuracy_all"] == stats["accuracy_utilitarian"] == pytest.approx(2 / 3)
    assert stats["human_gold_in_pool"] == 2
    assert stats["human_gold_utilitarian_share"] == 0.5
    assert stats["human_gold_queries"] == 2 and stats["accuracy_human_gold"] == 0.5


def test_statistics_without_any_human_gold_are_none_not_zero():
    records = [{"qid": "a", "known": False, "utility_pids": [], "rag": _rag(False, False, None),
                "closed_book_capped": False,
                "candidates": [{"pid": "p1", "utility": 0, "gold": False, "capped": False}]}]
    stats = UtilityTask.statistics(records)
    assert stats["human_gold_in_pool"] == 0 and stats["human_gold_utilitarian_share"] is None
    assert stats["human_gold_queries"] == 0 and stats["accuracy_human_gold"] is None


def test_likelihood_of_the_first_gold_answer_in_one_batch():
    llm = ScriptedBackend(answer=_answer, loglik=lambda context, answer: -float(len(answer)))
    records = _label(llm, with_likelihood=True)
    [batch] = llm.batches("loglikelihood")
    assert [r.continuation for r in batch] == ["Wilhelm Conrad Röntgen"] * 2 + ["May 18, 2018"] * 2
    assert batch[1].context == utility.passage_prompt(NOBEL.question, [DISTRACTOR])
    assert records[0]["candidates"][0]["loglikelihood"] == -len("Wilhelm Conrad Röntgen")


def test_a_query_without_gold_answers_is_refused_before_any_call():
    from labeler.errors import InputError
    from labeler.sources.types import Source

    task = UtilityTask(UtilityConfig(dataset="nq-sample"))
    source = Source("x", "0", [NOBEL, Query("q-none", "who?", [])], None)
    with pytest.raises(InputError, match="query 'q-none' has no gold answer"):
        task.check(source)


def test_a_prompt_longer_than_the_window_fails_before_the_batch_naming_its_query():
    from labeler.errors import PromptTooLongError

    # tokens are words here: closed-book prompts (27 words) + 32 answer tokens fit 60; the
    # one-passage prompts (59 to 67 words) and the all-passage ones do not
    llm = ScriptedBackend(answer=_answer, max_context=60)
    with pytest.raises(PromptTooLongError) as error:
        _label(llm, max_new_tokens=32)
    assert error.value.line().startswith(
        "the prompt for 'q-nobel, passage nq-oracle-0' has 67 tokens + 32 for the answer, more "
        "than the model's 60-token context window (5 more are too long)")
    # one call: the too-long prompts are all found before any answer is decoded
    assert llm.batches("generate") == []


def test_answers_are_capped_at_max_new_tokens_and_each_record_says_which_were_cut():
    """A closed-book answer cut at the cap loses its gold answer: the known Deadpool query
    turns unknown and its gold passage gets utility. The records say which answers were cut
    (as the backend reported), and the statistics count them."""
    def answer(text: str) -> str:
        if not text.startswith("Information:") and "deadpool" in text:
            return " The next Deadpool movie is released on May 18, 2018"  # 10 words
        return _answer(text)

    full = _label(ScriptedBackend(answer=answer))  # the default cap: 256
    assert full[1]["known"] is True and full[1]["closed_book_capped"] is False
    cut = _label(ScriptedBackend(answer=answer), max_new_tokens=7)
    deadpool = cut[1]
    assert deadpool["closed_book_answer"] == "The next Deadpool movie is released on"
    assert (deadpool["known"], deadpool["closed_book_capped"]) == (False, True)
    assert deadpool["utility_pids"] == ["nq-oracle-1"]  # false utility, made by the cut
    assert [c["capped"] for c in deadpool["candidates"]] == [False, False]
    assert deadpool["rag"]["utilitarian"]["capped"] is False  # "It is May 18, 2018": 5 words
    stats = UtilityTask.statistics(cut)
    assert (stats["capped_answers"], stats["capped_closed_book"]) == (1, 1)
    from labeler.schemas import schema_problems

    assert [schema_problems(r, "utility") for r in cut] == [[], []]  # schema version 3


def test_the_cap_is_the_configs_and_goes_into_the_manifest():
    assert UtilityConfig(dataset="nq-sample").max_new_tokens == utility.MAX_NEW_TOKENS == 256
    task = UtilityTask(UtilityConfig(dataset="nq-sample", max_new_tokens=64))
    assert task.manifest()["sampling"]["answer"]["max_tokens"] == 64
    assert UtilityTask(UtilityConfig(dataset="nq-sample")).manifest()["sampling"]["answer"][
        "max_tokens"] == 256
    from labeler.errors import InputError

    with pytest.raises(InputError, match="max_new_tokens must be at least 1, got 0"):
        UtilityConfig(dataset="nq-sample", max_new_tokens=0)
    assert UtilityConfig.from_options(dataset="nq-sample", max_new_tokens=None).max_new_tokens \
        == 256  # an unset option keeps the default


_PAPERS = {"source_dataset": "nq", "config": {"limit": None, "corpus": None},
           "corpus_source": {"name": "kilt-w100", "revision": "kilt_knowledgesource.json:cut1",
                             "license": "cc-by-sa-3.0"},
           "pool": "rp", "k": 20, "run": None,
           "encoder": {"name": "bge-m3", "model_id": "BAAI/bge-m3"},
           "corpus_passages": 34_000_000, "sampling": {"answer": {"max_tokens": 4096}},
           "stats": {"answers": 10, "capped_answers": 0}}


def test_departures_from_the_papers_setting_come_from_the_manifest():
    assert utility_setting.departures(_PAPERS) == []
    assert utility_setting.departures({}) == []  # nothing recorded, nothing judged
    demo = {**_PAPERS, "source_dataset": "nq-sample", "config": {"limit": 10, "corpus": None},
            "corpus_source": None,
            "pool": "mcp", "k": 5, "corpus_passages": 4349,
            "encoder": {"name": "minilm", "model_id": "sentence-transformers/all-MiniLM-L6-v2"},
            "sampling": {"answer": {"max_tokens": 256}},
            "stats": {"answers": 1200, "capped_answers": 3}}
    assert utility_setting.departures(demo) == [
        ("the queries are `nq-sample`, a 300-question sample of NQ-open bundled with labeler, "
         "not a full query set"),
        "only the first 10 queries are labelled, not the whole query set",
        ("the pool is `mcp` (top-k retrieved plus the human gold passages), not the paper's "
         "top-20 retrieved passages (`rp`)"),
        "k = 5 retrieved passages per query, not 20",
        "dense retrieval with minilm (`sentence-transformers/all-MiniLM-L6-v2`), not BGE-M3",
        ("retrieval searched only the source's own 4,349 passages (those shipped with its "
         "queries), not a full corpus as the paper's"),
        ("answers are capped at 256 new tokens, the paper's code at 4,096 (3 of 1,200 answers "
         "reached it)"),
    ]
    run = {**_PAPERS, "run": "my.trec", "encoder": None, "corpus_passages": 4349}
    assert utility_setting.departures(run) == [
        ("the retrieved passages come from the run file `my.trec`, whose retriever is not "
         "recorded (the paper retrieves with BGE-M3)")]
    gold = {**_PAPERS, "pool": "hgp", "k": 3, "encoder": None, "corpus_passages": 4349}
    assert utility_setting.departures(gold) == [  # no retrieval: k, encoder and corpus do not apply
        ("the pool is `hgp` (the human gold passages only), not the paper's top-20 retrieved "
         "passages (`rp`)")]
    own = {**_PAPERS, "source_dataset": "jsonl:/data/dev.jsonl",
           "config": {"limit": None, "corpus": "/data/corpus.jsonl"}, "corpus_passages": 10}
    assert utility_setting.departures(own) == [
        "the queries come from the file `/data/dev.jsonl`, not from one of the paper's query sets",
        ("retrieval searched `/data/corpus.jsonl` (10 passages), not the paper's `kilt-w100` "
         "(KILT's Wikipedia in DPR's 100-word passages, about 34M)")]
    dpr = {**_PAPERS, "config": {"limit": None, "corpus": "wiki-dpr"},
           "corpus_source": {"name": "wiki-dpr"}, "corpus_passages": 21_015_324}
    assert utility_setting.departures(dpr) == [
        ("retrieval searched `wiki-dpr` (21,015,324 passages), not the paper's `kilt-w100` "
         "(KILT's Wikipedia in DPR's 100-word passages, about 34M)")]
    marco = {**_PAPERS, "source_dataset": "msmarco-fqa", "corpus_passages": 8_841_823,
             "config": {"limit": None, "corpus": "msmarco-passage"}}
    assert utility_setting.departures(marco) == []
    assert utility_setting.departures({**marco, "config": {"limit": None, "corpus": "wiki-dpr"},
                               "corpus_passages": 21_015_324}) == [
        ("retrieval searched `wiki-dpr` (21,015,324 passages), not the paper's "
         "`msmarco-passage` (MS MARCO's 8.8M passages)")]
    tevatron = {**_PAPERS, "source_dataset": "nq-tevatron"}
    assert utility_setting.departures(tevatron) == [
        ("the queries are `nq-tevatron`, not one of the paper's query sets (2wiki, fever, "
         "hotpotqa, msmarco-fqa, nq, tq)")]
