"""choice_probs with a shared chat prefix (a document, then each of its questions): the hf
backend computes the prefix once per group and only the tails after it, with the same
probabilities as whole prompts; the cache never splits a group across batches."""

from __future__ import annotations

import pytest
from support.scripted import ScriptedBackend

from labeler.llm import ChoiceRequest, Message, chat
from labeler.llm.batching import Collator, chat_prefix
from labeler.llm.cache import CachedBackend
from labeler.sources.registry import load_source

# Yes/no questions of the kind the rubric task asks, on CISI's information-science documents.
QUESTIONS = (
    "Does the document discuss library classification schemes?",
    "Does the document report a study of how people use libraries?",
    "Is the document about retrieving information automatically?",
)


@pytest.fixture(scope="module")
def documents() -> list[str]:
    """Three real CISI documents of different lengths (bundled cisi-sample)."""
    passages = load_source("cisi-sample").corpus.passages
    return [passages[i].contents[:600 + 300 * i] for i in range(3)]


def _requests(documents: list[str]) -> list[ChoiceRequest]:
    """Each document first, then each question; plus one lone single-turn prompt."""
    asked = [ChoiceRequest((Message("system", "Answer yes or no."), Message("user", d),
                            Message("user", q)), (" yes", " no", "Yes", "No"))
             for d in documents for q in QUESTIONS]
    return asked + [ChoiceRequest(chat("Is water wet? Answer yes or no."))]


def _shapes(model, monkeypatch) -> list[tuple[int, int]]:
    """Records the (rows, width) of every forward pass the model runs."""
    seen: list[tuple[int, int]] = []
    forward = model.forward

    def recording(*args, **kwargs):
        seen.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", recording)
    return seen


def test_prefix_reuse_gives_the_probabilities_of_whole_prompts(smollm, documents, monkeypatch):
    requests = _requests(documents)
    shapes = _shapes(smollm.model, monkeypatch)
    monkeypatch.setattr(smollm, "batch_size", 4)  # 3-question groups; the lone prompt joins one
    shared = smollm.choice_probs(requests)
    reused = list(shapes)
    shapes.clear()
    monkeypatch.setattr(smollm, "prefix_reuse", False)
    whole = smollm.choice_probs(requests)
    for got, expected in zip(shared, whole, strict=True):
        assert got.keys() == expected.keys()
        for choice in got:
            assert got[choice] == pytest.approx(expected[choice], abs=1e-4)
    # not one answer for all: the documents get different probabilities
    assert len({round(p["Yes"] / (p["Yes"] + p["No"]), 3) for p in whole[:-1]}) > 3
    # with reuse, tails are short: every second pass (the tails) is narrower than any
    # whole-prompt pass, and far fewer token positions run in all
    assert max(width for _, width in reused[1::2]) < min(width for _, width in shapes)
    assert sum(r * w for r, w in reused) < sum(r * w for r, w in shapes) / 2


def test_a_document_and_its_questions_are_one_group():
    doc, other = Message("user", "Document A"), Message("user", "Document B")
    ask = [Message("user", q) for q in QUESTIONS]
    prompts = [(doc, ask[0]), (other, ask[0]), (doc, ask[1]), (ask[2],), (doc, ask[2])]
    keys = [chat_prefix(p) for p in prompts]
    assert keys[0] == keys[2] == keys[4] == (doc,)
    assert keys[1] == (other,) and keys[3] == (ask[2],)  # a one-turn chat: a group of its own
    system_only = (Message("system", "Be brief."), ask[0])
    assert chat_prefix(system_only) == system_only  # a system prompt alone groups nothing
    batches = Collator(prompts, sort_key=len, group_key=chat_prefix, batch_size=2)
    assert [[prompts[k] for k in batch] for batch in batches] == [
        [prompts[0], prompts[2], prompts[4]], [prompts[1], prompts[3]]]


def test_the_cache_sends_a_group_in_one_batch(tmp_path):
    scripted = ScriptedBackend(probs=lambda text, choices: {c: 0.5 for c in choices})
    scripted.batch_size = 2
    cached = CachedBackend(scripted, cache_dir=tmp_path)
    doc = Message("user", "Document A")
    requests = [ChoiceRequest((doc, Message("user", q))) for q in QUESTIONS]
    cached.choice_probs(requests + [ChoiceRequest(chat("Is water wet?"))])
    assert [len(batch) for batch in scripted.batches("choice_probs")] == [3, 1]
    cached.choice_probs(requests[:2])  # cached per request: nothing asked again
    assert len(scripted.batches("choice_probs")) == 2
