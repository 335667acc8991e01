"""SEER's conciseness: the full-length answer's prompt and parsing with the scripted backend,
the cosine with the bundled MiniLM, then the real SmolLM2 on two nq-sample questions."""

from __future__ import annotations

import numpy as np
import pytest
from support.scripted import ScriptedBackend

from labeler.errors import ModelLoadError
from labeler.llm.calls import Calls
from labeler.metrics.answers import has_answer
from labeler.metrics.seer.conciseness import (
    FULL_ANSWER,
    REWRITE,
    conciseness,
    full_answers,
    load_sbert,
    parse_sentence,
)
from labeler.metrics.seer.experts import load_experts
from labeler.metrics.seer.extraction import Extraction
from labeler.sources.registry import load_source

Q = "who got the first nobel prize in physics"
T = "The first Nobel Prize in Physics was awarded to Wilhelm Conrad Röntgen."


@pytest.fixture(scope="module")
def sbert():
    return load_sbert()


def _rewrite(prompt: str) -> str:
    """The scripted generator: a prefixed rewrite for the Nobel question, nothing otherwise."""
    return f"Full-length answer: {T}\nQuestion: more" if Q in prompt.splitlines()[-3] else " "


def test_full_answers_are_one_greedy_request_per_question_and_answer():
    items = [Extraction(Q, "Wilhelm Conrad Röntgen", e, ("p",), qid="nq-0")
             for e in ("Röntgen won it.", "In 1901.")]
    items.append(Extraction("when is the next deadpool movie", "May 18, 2018", "May.", ("p",)))
    backend = ScriptedBackend(answer=_rewrite)
    got = full_answers(Calls(backend), items)
    assert got == [T, T, "May 18, 2018"]  # an empty rewrite: the answer stands in
    (prompts,) = backend.batches("generate")
    assert len(prompts) == 2  # the two Nobel items share one request
    assert prompts[0][-1].content == FULL_ANSWER.format(question=Q,
                                                        answer="Wilhelm Conrad Röntgen")
    assert REWRITE.greedy


def test_parse_sentence_reads_the_first_line_without_its_label():
    assert parse_sentence("\n\n Full length answer: Lit sang it.\nQuestion: x") == "Lit sang it."
    assert parse_sentence("<think>hmm</think>\nLit sang it.") == "Lit sang it."
    assert parse_sentence("") == ""


def test_conciseness_is_the_cosine_of_the_embeddings(sbert):
    items = [Extraction(Q, "Wilhelm Conrad Röntgen", e, ("p",)) for e in
             (T, "Röntgen, a German physicist, won it in 1901.", "Deadpool 2 opens in May.")]
    got = conciseness(Calls(ScriptedBackend(answer=_rewrite)), items, sbert)
    vectors = sbert.encode([T] + [x.evidence for x in items], "test").astype(np.float64)
    np.testing.assert_allclose(got, vectors[1:] @ vectors[0], atol=1e-6)
    assert got[0] == pytest.approx(1.0, abs=1e-6)  # the evidence is t itself
    assert got[0] > got[1] > got[2]  # closer to t scores higher
    assert conciseness(Calls(ScriptedBackend()), [], sbert).size == 0


def test_experts_describe_themselves_for_the_manifest(sbert):
    experts = load_experts()
    assert experts.describe() == {"faithfulness": "llm", "helpfulness": "loglikelihood-gain",
                                  "conciseness": "sbert:sentence-transformers/all-MiniLM-L6-v2"}


def test_an_sbert_model_that_cannot_load_is_not_replaced():
    with pytest.raises(ModelLoadError) as raised:
        load_sbert("no-such-org/no-such-model")
    assert "leave the SBERT model unset for the bundled minilm" in raised.value.line()


@pytest.mark.slow
def test_real_model_rewrites_and_scores_two_nq_questions(smollm, sbert):
    queries = load_source("nq-sample", limit=2).queries
    items = [Extraction(q.question, q.answers[0], q.gold[0].text.split(". ")[0] + ".",
                        tuple(p.contents for p in q.gold), qid=q.qid) for q in queries]
    llm = Calls(smollm)
    answers = full_answers(llm, items)
    for t, q in zip(answers, queries):
        assert t and (has_answer(t, q.answers) or t.rstrip().endswith((".", "!")))
    got = conciseness(llm, items, sbert)
    assert got.shape == (2,) and ((got >= -1) & (got <= 1)).all()
