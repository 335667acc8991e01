"""SEER's experts: arithmetic and batching with the scripted backend, then the real SmolLM2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit
from scripted import ScriptedBackend

from labeler.llm.base import yes_probability
from labeler.metrics.experts import ANSWER_PREFIX, Extraction, faithfulness, helpfulness

FIXTURES = Path(__file__).parents[1] / "score" / "fixtures"


def _items():
    q = "who sings does he love me with reba"
    return [
        Extraction(q, "Linda Davis", "sung with Linda Davis", ("Does He Love You ...",)),
        Extraction(q, "Linda Davis", "a song", ("Does He Love You ...",)),
    ]


def test_helpfulness_is_sigmoid_of_the_loglikelihood_gain_in_one_batched_call():
    items = _items()

    def loglik(prompt: str, answer: str) -> float:
        return -1.0 if "Linda Davis" in prompt else (-2.5 if "Evidence" in prompt else -3.0)

    backend = ScriptedBackend(loglik=loglik)
    got = helpfulness(backend, items)
    np.testing.assert_allclose(got, expit([2.0, 0.5]), rtol=0, atol=1e-15)
    # one batch: 2 with evidence + 1 shared closed-book
    (batch,) = backend.batches("loglikelihood")
    assert len(batch) == 3
    assert {r.continuation for r in batch} == {"Linda Davis"}


def test_faithfulness_is_p_yes_among_yes_and_no():
    items = _items()
    answers = iter([{" yes": 0.3, " no": 0.1}, {" yes": 0.0, " no": 0.0}])
    backend = ScriptedBackend(probs=lambda prompt, choices: next(answers))
    got = faithfulness(backend, items)
    np.testing.assert_allclose(got, [0.75, 0.5])  # no mass on either: undecided
    (requests,) = backend.batches("choice_probs")
    assert requests[0].prompt[-1].role == "assistant"
    assert requests[0].prompt[-1].content == ANSWER_PREFIX
    assert "sung with Linda Davis" in requests[0].prompt[0].content
    assert requests[0].choices == (" yes", " no")


def test_no_items_no_calls():
    backend = ScriptedBackend()
    assert helpfulness(backend, []).size == 0 and faithfulness(backend, []).size == 0
    assert backend.calls == []


@pytest.mark.slow
def test_real_model_prefers_evidence_with_the_answer(smollm):
    """An NQ question and its candidate passages from a real artifact (see its README.md)."""
    record = json.loads((FIXTURES / "utility-v1" / "data-00000.jsonl").read_text().splitlines()[0])
    passages = tuple(f"{c['title']} {c['text']}" for c in record["candidates"])
    answer = record["answers"][0]
    with_answer = next(p for p in passages if answer in p)
    sentence = next(s for s in with_answer.split(". ") if answer in s)
    without = next(p for p in passages if answer not in p).split(". ")[0]
    items = [Extraction(record["question"], answer, e, passages) for e in (sentence, without)]
    helpful, faithful = helpfulness(smollm, items), faithfulness(smollm, items)
    assert ((helpful > 0) & (helpful < 1)).all() and ((faithful > 0) & (faithful < 1)).all()
    assert helpful[0] > helpful[1]


def test_yes_probability_reads_the_named_choices_and_ignores_the_rest():
    assert yes_probability({"Yes": 0.2, "No": 0.6, " maybe": 0.2}, yes="Yes", no="No") == 0.25
    assert yes_probability({" yes": 0.0, " no": 0.0}) == 0.5
