"""The utility task on a claim dataset (FEVER): the paper's claim-verification prompts, chosen
by the source's kind, and verdicts matched by has_answer.

Claims are the real KILT FEVER dev records of tests/fixtures/kilt_fever_dev.jsonl, read
through the `fever` adapter's own code. The passage is a real DPR-wiki passage:
../shared/data/wiki_passages/sample_data.jsonl id "525" (RUC-NLPIR/FlashRAG, MIT), unmodified.
"""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from support.scripted import ScriptedBackend

from labeler.errors import InputError
from labeler.retrieval import Candidate
from labeler.sources import kilt
from labeler.sources.passage import Passage
from labeler.sources.types import Source
from labeler.tasks import utility
from labeler.tasks.base import Shard, Task
from labeler.tasks.utility import UtilityConfig, UtilityTask

FIXTURES = Path(__file__).parent.parent / "fixtures"
APSARAVIS = Passage(
    "525", "Apsaravis",
    "\u2013 long believed to be a modern bird \u2013, and perhaps \"\"Ambiortus\"\" with which the "
    "preceding two had occasionally been allied, form a distinct lineage. This has been named "
    "\"\"Palintropiformes\"\", but Apsaraviformes was proposed earlier for the \"\"Apsaravis\"\" "
    "lineage and is thus the senior synonym. And if this group is held to include "
    "\"\"Apatornis\"\" too, it would receive the name Ambiortiformes, which was proposed even "
    "earlier. Apsaravis Apsaravis is a Mesozoic bird genus from the Late Cretaceous. The single "
    "known species, Apsaravis ukhaana, lived about 78 million years ago, in the Campanian age of "
    "the Cretaceous period. Its fossilized remains",
)


@pytest.fixture(scope="module")
def fever() -> Source:
    rows = datasets.load_dataset("json", split="train",
                                 data_files=str(FIXTURES / "kilt_fever_dev.jsonl"))
    return kilt.from_dataset(rows, name="fever", revision="r", kind="claim")


def _shard(source: Source) -> Shard:
    # 204361 "The Cretaceous ended." gets the Apsaravis passage; the others no candidate
    pools = {q.qid: [Candidate(APSARAVIS, "retrieved", 1)] if q.qid == "204361" else []
             for q in source.queries}
    return Shard(0, tuple(source.queries), pools, kind=source.kind)


def test_claim_prompts_are_the_papers_verbatim():
    assert utility.closed_book_prompt("The Cretaceous ended.", "claim")[-1].content == (
        "Verify the following claim based on your internal knowledge with one or few words "
        "without the explanation. Claim: The Cretaceous ended.\n\n The final repsonse is "
        "REFUTES, SUPPORTS. Verification:")
    assert utility.passage_prompt("The Cretaceous ended.", [APSARAVIS], "claim")[-1].content == (
        "Information: \nApsaravis " + APSARAVIS.text + "\nVerify the following claim based on "
        "the given information or your internal knowledge  with one or few words without the "
        "source.\n Claim: The Cretaceous ended.\n\n The final repsonse is REFUTES, SUPPORTS. "
        "Verification:")


def test_the_manifest_records_the_prompts_of_the_sources_kind():
    task = UtilityTask(UtilityConfig(dataset="fever"))
    assert task.manifest("claim")["prompt_templates"] == {
        "closed_book": utility.CLAIM_CLOSED_BOOK, "with_passage": utility.CLAIM_WITH_PASSAGE}
    assert task.manifest()["prompt_templates"] == utility.PROMPT_TEMPLATES


def test_a_task_without_claim_prompts_refuses_a_claim_dataset():
    class QuestionsOnly(Task):
        name = "questions-only"

        def label(self, llm, shard):
            return []

        def planned_calls(self, source, candidates, gold):
            return []

        @staticmethod
        def statistics(records):
            return {}

    with pytest.raises(InputError) as error:
        QuestionsOnly(UtilityConfig(dataset="fever")).manifest("claim")
    assert error.value.line() == (
        "field 'dataset': the questions-only task labels questions, not claims")


def test_verdicts_are_matched_in_the_claim_answers(fever):
    def verdict(text: str) -> str:
        assert "Claim: " in text and "Question: " not in text  # only claim prompts are sent
        return " SUPPORTS." if "Cretaceous period" in text else "Verification: Refutes"

    llm = ScriptedBackend(answer=verdict)
    task = UtilityTask(UtilityConfig(dataset="fever"))
    records = task.label(task.calls(llm), _shard(fever))
    # closed-book REFUTES: right for the two REFUTES claims, wrong for the three SUPPORTS ones
    assert [(r["qid"], r["answers"], r["known"]) for r in records] == [
        ("137334", ["SUPPORTS"], False), ("111897", ["REFUTES"], True),
        ("219028", ["REFUTES"], True), ("204361", ["SUPPORTS"], False),
        ("105095", ["SUPPORTS"], False)]
    cretaceous = records[3]
    assert [(c["pid"], c["answer"], c["utility"]) for c in cretaceous["candidates"]] == [
        ("525", "SUPPORTS.", 1)]


def test_smollm_verifies_fever_claims_with_the_claim_prompts(fever, smollm, monkeypatch):
    sent = []
    generate = smollm.generate

    def spy(prompts, sampling):
        sent.extend(prompts)
        return generate(prompts, sampling)

    monkeypatch.setattr(smollm, "generate", spy)
    task = UtilityTask(UtilityConfig(dataset="fever"))
    records = task.label(task.calls(smollm), _shard(fever))
    assert sent and all("Verification:" in p[-1].content and "Claim: " in p[-1].content
                        for p in sent)
    outputs = [r["closed_book_answer"] for r in records] + [
        c["answer"] for r in records for c in r["candidates"]]
    verdicts = [o for o in outputs if "supports" in o.lower() or "refutes" in o.lower()]
    # the 135M model answers most claims with a verdict (greedy: "Verification: Refutes.")
    assert len(verdicts) >= 3, outputs
    assert any(r["known"] for r in records)  # a REFUTES claim answered right closed-book
