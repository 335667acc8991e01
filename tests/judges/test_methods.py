"""Judge methods' prompts, parsing and arithmetic, with the scripted backend.

The queries are nq-sample's first two (Nobel prize in physics; next Deadpool movie) and their
pools the real top-3 of tests/fixtures/nq_sample_minilm_top3.trec (MiniLM over nq-sample's
corpus): each query's own gold chunk first, then two topical passages. The LLM outputs are
the kinds of answer small chat models give (SmolLM2's, seen in the end-to-end tests, among
them): the asked format, extra words around it, ids repeated or out of range, nothing usable.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.scripted import ScriptedBackend

from labeler.errors import InputError, UnknownNameError
from labeler.judges.methods import Judge, JudgeConfig, named_passages, says_yes
from labeler.judges.prompts import PROMPTS
from labeler.llm.calls import Calls
from labeler.sources.passage import Passage
from labeler.tasks.base import Shard, make_shards
from labeler.tasks.utility import passage_prompt
from labeler.workflows.steps import config_pools, config_source

RUN = Path(__file__).parents[1] / "fixtures" / "nq_sample_minilm_top3.trec"


@pytest.fixture(scope="module")
def run2(tmp_path_factory) -> Path:
    """The fixture run cut to the first two queries (the judge tests label two)."""
    path = tmp_path_factory.mktemp("run") / "top3.trec"
    path.write_text("".join(line for line in RUN.read_text().splitlines(keepends=True)
                            if not line.startswith("nq-open-dev-oracle-2 ")))
    return path


def _config(run2: Path, **options) -> JudgeConfig:
    return JudgeConfig(dataset="nq-sample", limit=2, k=3, run=str(run2), **options)


def _shard(run2: Path, **options) -> Shard:
    config = _config(run2, **options)
    source = config_source(config)
    [shard] = make_shards(source.queries, config_pools(source, config), 8)
    return shard


def _judge(llm: ScriptedBackend | None, run2: Path, **options) -> list[dict]:
    return Judge(_config(run2, **options)).submit(None if llm is None else Calls(llm),
                                                 _shard(run2, **options))


def _passages(run2: Path, query: int) -> list[Passage]:
    shard = _shard(run2)
    return [c.passage for c in shard.pools[shard.queries[query].qid]]


@pytest.mark.parametrize(("output", "yes"), [
    ("Utility judgment: Yes.", True),
    ("Utility judgment: No.", False),
    ("Utility judgment: yes, the passage names the winner.", True),
    ("The passage is relevant, so yes", True),  # extra words: " yes" still counts
    ("Yes", False),  # no ": yes" nor " yes": the paper's rule reads it as no
    ("Utility judgment:Yes", False),  # no space after the colon: no, as in the paper
    ("Utility judgment: Yes/No.", True),  # the format echoed back counts as yes (the paper's)
    ("I cannot determine the utility of this passage.", False),
    ("", False),
])
def test_a_pointwise_judgment_is_yes_by_the_papers_rule(output, yes):
    assert says_yes(output) is yes


@pytest.mark.parametrize(("output", "positions"), [
    ("My selection:[[1],[3]].", [0, 2]),
    ("Sure! My selection: [[2], [1]]. Passage [2] names the winner.", [1, 0]),  # extra words
    ("My selection:[[3],[3],[1],[3]].", [2, 0]),  # repeated ids: the first mention counts
    ("My selection:[[0],[2],[4],[21]].", [1]),  # out of range for k = 3: dropped
    ("[3]>[1]>[2]", [2, 0, 1]),  # the ranking format
    ("My selection: passages 1 and 2.", []),  # no bracketed id: nothing parseable
    ("I'm ready to help. What's your next question?", []),
])
def test_listwise_answers_name_passages_first_mention_first(output, positions):
    assert named_passages(output, 3) == positions


def test_pvs_selects_the_yes_passages_and_records_p_yes(run2):
    # yes for each query's gold chunk (ranked first in the run), no otherwise
    def gold(text):
        return "awarded in 1901 to Wilhelm" in text or "released in the United States on" in text

    def answer(text):
        return "Utility judgment: Yes." if gold(text) else "Utility judgment: No, it does not."

    def probs(text, choices):
        return {" Yes": 0.375, " No": 0.125} if gold(text) else {" Yes": 0.125, " No": 0.375}

    llm = ScriptedBackend(answer=answer, probs=probs)
    records = _judge(llm, run2, method="pvs")

    assert [r["selected"] for r in records] == [["nq-oracle:64aaafc597c5"],
                                                ["nq-oracle:fcd918e70be9"]]
    assert [j["p_yes"] for r in records for j in r["judgments"]] == [0.75, 0.25, 0.25] * 2
    [generate], [probs] = llm.batches("generate"), llm.batches("choice_probs")
    assert len(generate) == len(probs) == 6  # one batched call each, a prompt per passage
    first = generate[0][0].content
    assert first == PROMPTS["question"]["pvs"][0]["judgment"].format(
        question="who got the first nobel prize in physics", passage=_passages(run2, 0)[0].contents)
    assert first.startswith("Question: who got the first nobel prize in physics \n Passage: "
                            "List of Nobel laureates in Physics The first Nobel Prize")
    assert first.endswith("The format of the output is: 'Utility judgment: Yes/No.'")
    assert probs[0].prompt[-1].content == "Utility judgment:"  # P(yes) after the label


def test_with_answer_shows_the_llms_own_all_passage_answer(run2):
    llm = ScriptedBackend(answer=lambda text: (
        " Wilhelm Conrad Röntgen\n" if text.startswith("Information:") else "My selection:[[1]]"))
    records = _judge(llm, run2, method="lvs", with_answer=True)

    pseudo, listwise = llm.batches("generate")
    # the pseudo-answer: the utility task's with-passage prompt over all three candidates
    assert pseudo[0] == passage_prompt("who got the first nobel prize in physics",
                                       _passages(run2, 0))
    assert records[0]["pseudo_answer"] == "Wilhelm Conrad Röntgen"
    turns = listwise[0]
    assert len(turns) == 2 + 2 * 3 + 1  # intro, ready; a user/assistant pair per passage; ask
    assert turns[0].content.startswith("I will provide you with 3 passages") and (
        "I will also give you a reference answer." in turns[0].content)
    assert turns[1].content == "Okay, please provide the passages and the reference answer."
    assert [t.content[:4] for t in turns[2:8:2]] == ["[1] ", "[2] ", "[3] "]
    assert turns[3].content == "Received passage [1]."
    assert ("Question: who got the first nobel prize in physics.\n\n Reference answer: Wilhelm "
            "Conrad Röntgen\n\n Determine") in turns[-1].content
    assert turns[-1].content.endswith("do not say any word or explain. \n        ")
    assert [r["selected"] for r in records] == [["nq-oracle:64aaafc597c5"],
                                                ["nq-oracle:fcd918e70be9"]]


def test_lvs_with_nothing_parseable_selects_nothing(run2):
    llm = ScriptedBackend(answer=lambda text: "The passages are all relevant to the question.")
    records = _judge(llm, run2, method="lvs")

    assert [r["selected"] for r in records] == [[], []]
    stats = Judge.statistics(records)
    assert stats["unparsed"] == 2 and stats["empty_selections"] == 2
    assert stats["mean_selected"] == 0


def test_lvr_ranks_only_the_named_passages_as_the_paper(run2):
    # the paper's run file holds the named passages only; a query naming none has no lines
    llm = ScriptedBackend(answer=lambda text: "[3]>[3]>[9]" if "nobel" in text else "None.")
    records = _judge(llm, run2, method="lvr")

    assert records[0]["ranking"] == ["nq-oracle:5105ad9ebfe5"]
    assert records[1]["ranking"] == [] and records[1]["parsed"] == 0
    assert Judge.statistics(records)["unparsed"] == 1
    [[first, _]] = llm.batches("generate")
    assert "Rank the passages based on the passages utility for youself" in first[0].content
    assert first[-1].content.endswith("Only response the ranked results, do not say any word "
                                      "or explain. \n        ")


def test_fill_unranked_ranks_the_rest_in_retrieval_order(run2):
    outputs = iter(["[3]>[3]>[9]", "Ranking: [2] > [1]. [2] is most useful."])
    llm = ScriptedBackend(answer=lambda text: next(outputs))
    records = _judge(llm, run2, method="lvr", fill_unranked=True)

    assert records[0]["ranking"] == ["nq-oracle:5105ad9ebfe5", "nq-oracle:64aaafc597c5",
                                     "flashrag:314"]
    assert records[1]["ranking"] == ["nq-oracle:46bc6599c842", "nq-oracle:fcd918e70be9",
                                     "nq-oracle:e982de391839"]


def test_likelihood_scores_the_pseudo_answer_with_each_passage(run2):
    # log P(answer | q, d): higher for the passage holding the answer's words
    def loglik(context, answer):
        return -1.0 if answer.split()[0] in context.split("Answer the following")[0] else -9.0

    llm = ScriptedBackend(answer=lambda text: " Röntgen" if "nobel" in text else " May 2018",
                          loglik=loglik)
    records = _judge(llm, run2, method="likelihood")

    assert records[0]["scores"] == {"nq-oracle:64aaafc597c5": -1.0, "flashrag:314": -9.0,
                                    "nq-oracle:5105ad9ebfe5": -9.0}
    [requests] = llm.batches("loglikelihood")
    assert len(requests) == 6 and requests[0].continuation == "Röntgen"
    assert requests[0].context == passage_prompt("who got the first nobel prize in physics",
                                                 _passages(run2, 0)[:1])


def test_retrieval_is_the_pools_order_and_asks_nothing(run2):
    records = _judge(None, run2, method="retrieval")

    assert records[1]["ranking"] == ["nq-oracle:fcd918e70be9", "nq-oracle:46bc6599c842",
                                     "nq-oracle:e982de391839"]


def test_the_manifest_templates_are_the_methods_own():
    lvr = Judge(JudgeConfig(dataset="nq-sample", method="lvr", with_answer=True))
    assert set(lvr.templates()) == {"intro", "ready", "passage", "received", "question",
                                    "pseudo_answer"}
    assert "passages' utility" in lvr.templates()["intro"]  # the paper's, with an answer
    assert Judge(JudgeConfig(dataset="nq-sample", method="retrieval")).templates() == {}
    assert set(Judge(JudgeConfig(dataset="nq-sample")).decoding) == {
        "judgment"}


def test_bad_options_are_refused_with_the_fix():
    with pytest.raises(UnknownNameError, match="Did you mean 'lvs'"):
        JudgeConfig(dataset="nq-sample", method="lvss")
    with pytest.raises(InputError, match="does not apply to retrieval, which asks the LLM "
                                         "nothing"):
        JudgeConfig(dataset="nq-sample", method="retrieval", with_answer=True)
    with pytest.raises(InputError, match="likelihood, which always scores the pseudo-answer"):
        JudgeConfig(dataset="nq-sample", method="likelihood", with_answer=True)
