"""SEER's experts: arithmetic and batching with the scripted backend, the faithfulness
registry, then the real SmolLM2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from support.scripted import ScriptedBackend

from labeler.errors import InputError, PromptTooLongError, UnknownNameError
from labeler.llm.base import yes_probability
from labeler.llm.calls import Calls
from labeler.metrics.seer.experts import TEMPLATES
from labeler.metrics.seer.extraction import Extraction
from labeler.metrics.seer.faithfulness import (
    ANSWER_PREFIX,
    LLMJudge,
    faithfulness_spec,
    load_faithfulness,
)
from labeler.metrics.seer.helpfulness import helpfulness, sigmoid

FIXTURES = Path(__file__).parents[2] / "scoring" / "fixtures"


def _items():
    q = "who sings does he love me with reba"
    return [
        Extraction(q, "Linda Davis", "sung with Linda Davis", ("Does He Love You ...",), qid="q1"),
        Extraction(q, "Linda Davis", "a song", ("Does He Love You ...",), qid="q1"),
    ]


def test_helpfulness_is_sigmoid_of_the_loglikelihood_gain_in_one_batched_call():
    items = _items()

    def loglik(prompt: str, answer: str) -> float:
        return -1.0 if "Linda Davis" in prompt else (-2.5 if "Evidence" in prompt else -3.0)

    backend = ScriptedBackend(loglik=loglik)
    got = helpfulness(Calls(backend), items)
    # σ(−1 − (−3)) = 1 / (1 + e^−2), σ(−2.5 − (−3)) = 1 / (1 + e^−0.5)
    np.testing.assert_allclose(got, [1 / (1 + math.exp(-2)), 1 / (1 + math.exp(-0.5))],
                               rtol=0, atol=1e-15)
    # one batch: 2 with evidence + 1 closed-book request the two items share
    (batch,) = backend.batches("loglikelihood")
    assert len(batch) == 3
    assert {r.continuation for r in batch} == {"Linda Davis"}


def test_sigmoid_is_stable_at_the_extremes():
    x = np.array([-1000.0, -30.0, -1.0, 0.0, 1.0, 30.0, 1000.0])
    with np.errstate(over="raise"):  # e^1000 would overflow: the stable form never computes it
        got = sigmoid(x)
    np.testing.assert_allclose(got, [1 / (1 + math.exp(-v)) if v > -700 else 0.0 for v in x],
                               rtol=1e-15, atol=0)
    assert got[0] == 0.0 and got[-1] == 1.0


def test_a_too_long_prompt_names_its_query():
    items = _items()
    backend = ScriptedBackend(loglik=lambda p, a: 0.0, max_context=10)
    with pytest.raises(PromptTooLongError) as raised:
        helpfulness(Calls(backend), items)
    assert raised.value.name == "q1" and "the prompt for 'q1'" in str(raised.value)


def test_llm_faithfulness_is_p_yes_among_yes_and_no():
    items = _items()
    answers = iter([{" yes": 0.3, " no": 0.1}, {" yes": 0.0, " no": 0.0}])
    backend = ScriptedBackend(probs=lambda prompt, choices: next(answers))
    got = load_faithfulness("llm")(Calls(backend), items)
    np.testing.assert_allclose(got, [0.75, 0.5])  # no mass on either: undecided
    (requests,) = backend.batches("choice_probs")
    assert requests[0].prompt[-1].role == "assistant"
    assert requests[0].prompt[-1].content == ANSWER_PREFIX
    assert "sung with Linda Davis" in requests[0].prompt[0].content
    assert requests[0].choices == (" yes", " no")


def test_no_items_no_calls():
    backend = ScriptedBackend()
    assert helpfulness(Calls(backend), []).size == 0
    assert LLMJudge()(Calls(backend), []).size == 0
    assert backend.calls == []


@pytest.mark.parametrize(("spec", "parsed"), [
    ("llm", ("llm", None)),
    ("alignscore", ("alignscore", None)),
    ("alignscore:yzha/AlignScore/AlignScore-base.ckpt",
     ("alignscore", "yzha/AlignScore/AlignScore-base.ckpt")),
    ("nli:cross-encoder/nli-deberta-v3-base", ("nli", "cross-encoder/nli-deberta-v3-base")),
])
def test_faithfulness_specs(spec, parsed):
    assert faithfulness_spec(spec) == parsed


def test_bad_faithfulness_specs_say_what_is_available():
    with pytest.raises(UnknownNameError) as raised:
        load_faithfulness("alignscor")
    assert raised.value.line().startswith(
        "unknown faithfulness scorer 'alignscor'. Did you mean 'alignscore'? "
        "Available: llm, alignscore, nli")
    with pytest.raises(InputError, match="names no model after the colon"):
        load_faithfulness("nli:")
    with pytest.raises(InputError, match="nli needs a model: nli:MODEL"):
        load_faithfulness("nli")
    with pytest.raises(InputError, match="is the generator itself and takes no model"):
        load_faithfulness("llm:qwen")


def test_templates_name_every_prompt_of_the_experts():
    assert set(TEMPLATES) == {"helpfulness_with_evidence", "helpfulness_without_evidence",
                              "faithfulness", "answer_prefix", "full_answer"}
    assert "{question}" in TEMPLATES["full_answer"] and "{answer}" in TEMPLATES["full_answer"]


def test_yes_probability_reads_the_named_choices_and_ignores_the_rest():
    assert yes_probability({"Yes": 0.2, "No": 0.6, " maybe": 0.2}, yes="Yes", no="No") == 0.25
    assert yes_probability({" yes": 0.0, " no": 0.0}) == 0.5


@pytest.mark.slow
def test_real_model_prefers_evidence_with_the_answer(smollm):
    """An NQ question and its candidate passages from a real artifact (see its README.md)."""
    record = json.loads((FIXTURES / "utility-v1" / "data-00000.jsonl").read_text().splitlines()[0])
    passages = tuple(f"{c['title']} {c['text']}" for c in record["candidates"])
    answer = record["answers"][0]
    with_answer = next(p for p in passages if answer in p)
    sentence = next(s for s in with_answer.split(". ") if answer in s)
    without = next(p for p in passages if answer not in p).split(". ")[0]
    items = [Extraction(record["question"], answer, e, passages, qid=record["qid"])
             for e in (sentence, without)]
    llm = Calls(smollm)
    helpful, faithful = helpfulness(llm, items), LLMJudge()(llm, items)
    assert ((helpful > 0) & (helpful < 1)).all() and ((faithful > 0) & (faithful < 1)).all()
    assert helpful[0] > helpful[1]
