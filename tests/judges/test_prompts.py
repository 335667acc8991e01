"""The judges' prompts are the utility paper's code's, byte for byte, for questions and claims.

tests/fixtures/paper_prompts.json holds the chats the paper's code builds
(hengran/LLM_specific_utility @ 27a07e31, src/dataset.py and src/fever/dataset.py: its prompt
functions run on its own triple-quoted instructions, written by scripts/paper_prompts.py) for
one real NQ dev question and one real KILT FEVER dev claim, over three real DPR passages as
rows of the paper's data ({docid, title, text}: tests/fixtures/tevatron_nq_dev.jsonl's first
record, its first two distinct positive passages and first hard negative). Each judge here runs on the
same query and rows through the scripted backend, and the chats it sends must be those.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from support.scripted import ScriptedBackend

from labeler.errors import InputError
from labeler.judges.methods import Judge, JudgeConfig
from labeler.judges.prompts import render_passage
from labeler.llm.calls import Calls
from labeler.retrieval import Candidate
from labeler.sources import kilt
from labeler.sources.passage import Passage
from labeler.sources.types import Query
from labeler.tasks.base import Shard

PAPER = json.loads((Path(__file__).parents[1] / "fixtures" / "paper_prompts.json").read_text())
PASSAGES = [Passage(r["docid"], r["title"], r["text"]) for r in PAPER["rows"]]


def _run(kind: str, method: str, with_answer: bool) -> ScriptedBackend:
    """The judge `method` on the fixture's query of `kind`; the backend that saw its calls
    (every answer is the fixture's reference answer, the pseudo-answer among them)."""
    paper = PAPER["kinds"][kind]
    query = Query("q", paper["query"], [paper["answer"]])
    shard = Shard(0, (query,), {"q": [Candidate(p, "retrieved", i)
                                      for i, p in enumerate(PASSAGES, 1)]}, kind=kind)
    llm = ScriptedBackend(answer=lambda text: paper["answer"], loglik=lambda c, a: -1.0,
                          probs=lambda text, choices: dict.fromkeys(choices, 0.5))
    dataset = "fever" if kind == "claim" else "nq"
    Judge(JudgeConfig(dataset=dataset, method=method, with_answer=with_answer)).submit(
        Calls(llm), shard)
    return llm


def _messages(chat) -> list[dict]:
    return [{"role": m.role, "content": m.content} for m in chat]


@pytest.mark.parametrize("kind", ["question", "claim"])
@pytest.mark.parametrize(("method", "with_answer"), [
    ("pvs", False), ("pvs", True), ("lvs", False), ("lvs", True), ("lvr", False), ("lvr", True),
])
def test_judgments_are_asked_as_the_papers_code_asks_them(kind, method, with_answer):
    paper = PAPER["kinds"][kind]["prompts"]
    batches = _run(kind, method, with_answer).batches("generate")
    judged = [_messages(chat) for chat in batches[-1]]
    want = paper[method + ("_answer" if with_answer else "")]
    assert judged == (want if method == "pvs" else [want])
    if with_answer:  # the pseudo-answer: the paper's with-passage prompt over every passage
        assert [_messages(chat) for chat in batches[0]] == [paper["pseudo_answer"]]


@pytest.mark.parametrize("kind", ["question", "claim"])
def test_likelihood_scores_the_answer_after_the_papers_prompt(kind):
    [requests] = _run(kind, "likelihood", False).batches("loglikelihood")
    assert [_messages(r.context) for r in requests] == PAPER["kinds"][kind]["prompts"][
        "likelihood"]
    assert {r.continuation for r in requests} == {PAPER["kinds"][kind]["answer"]}


def test_the_listwise_instruction_keeps_the_papers_indent():
    # the tool once stripped it: the paper appends its triple-quoted string as it is
    last = PAPER["kinds"]["question"]["prompts"]["lvr"][-1]["content"]
    assert last.endswith("knowledge.\n\n        Directly output the ranked the passages in "
                         "descending order of utility for yourself in answering the question. "
                         "The format of the output is: '[i]>[j]>...'. Only response the ranked "
                         "results, do not say any word or explain. \n        ")
    assert _messages(_run("question", "lvr", False).batches("generate")[0][0])[-1]["content"] \
        == last


def test_a_passage_turn_shows_the_papers_row_or_the_clean_text():
    reba = PASSAGES[0]  # its text holds both quote marks, so Python escapes the single ones
    assert render_passage(reba) == str({"docid": reba.pid, "title": reba.title,
                                        "text": reba.text})
    assert render_passage(reba).startswith("{'docid': '11828866', 'title': 'Does He Love You', "
                                           "'text': 'Does He Love You \"Does He Love You\"")
    assert "Reba\\'s album" in render_passage(reba)
    assert render_passage(reba, "clean") == f"{reba.title} {reba.text}"


def test_clean_passages_show_title_and_text():
    paper = PAPER["kinds"]["question"]
    query = Query("q", paper["query"], [paper["answer"]])
    shard = Shard(0, (query,), {"q": [Candidate(p, "retrieved", i)
                                      for i, p in enumerate(PASSAGES, 1)]})
    llm = ScriptedBackend(answer=lambda text: "[1]")
    Judge(JudgeConfig(dataset="nq", method="lvs", passage_format="clean")).submit(Calls(llm),
                                                                                  shard)
    [[chat]] = llm.batches("generate")
    assert [m.content for m in chat[2:8:2]] == [f"[{i}] {p.title} {p.text}"
                                               for i, p in enumerate(PASSAGES, 1)]


def test_options_for_other_methods_are_refused():
    with pytest.raises(InputError, match="--passage-format applies to lvs and lvr, not pvs"):
        JudgeConfig(dataset="nq", method="pvs", passage_format="clean")
    with pytest.raises(InputError, match="--fill-unranked applies to lvr, not lvs"):
        JudgeConfig(dataset="nq", method="lvs", fill_unranked=True)


def test_fever_claims_are_judged_with_the_claim_prompts():
    # the real KILT FEVER dev claims, read by the fever adapter's own code
    rows = datasets.load_dataset("json", split="train",
                                 data_files=str(Path(__file__).parents[1] / "fixtures"
                                                / "kilt_fever_dev.jsonl"))
    fever = kilt.from_dataset(rows, name="fever", revision="r", kind="claim")
    shard = Shard(0, tuple(fever.queries), {q.qid: [Candidate(p, "retrieved", i) for i, p in
                                                   enumerate(PASSAGES, 1)]
                                            for q in fever.queries}, kind=fever.kind)
    llm = ScriptedBackend(answer=lambda text: "SUPPORTS" if text.startswith("Information")
                          else "My selection:[[2]]")
    records = Judge(JudgeConfig(dataset="fever", method="lvs", with_answer=True)).submit(
        Calls(llm), shard)

    pseudo, judged = llm.batches("generate")
    claim = fever.queries[0].question
    assert pseudo[0][-1].content.endswith(f"Claim: {claim}\n\n The final repsonse is REFUTES, "
                                          "SUPPORTS. Verification:")
    assert judged[0][0].content.endswith(f"in verifying the claim: {claim}.")
    assert judged[0][-1].content.startswith(f"Claim: {claim}.\n\n Reference verification: "
                                            "SUPPORTS\n\n")
    assert [r["selected"] for r in records] == [[PASSAGES[1].pid]] * len(fever.queries)
    assert Judge(JudgeConfig(dataset="fever", method="retrieval")).templates("claim") == {}
