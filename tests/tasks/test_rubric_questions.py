"""The rubric's question generator: the experiment's prompt and response schema, JSON read
whole, free text as the fallback, and which of the two each query got, with the scripted
backend (a structured one playing vllm, an unstructured one playing hf)."""

from __future__ import annotations

import json

import pytest
from support.scripted import ScriptedBackend

from labeler.errors import InputError
from labeler.llm.base import Sampling
from labeler.retrieval import build_pools
from labeler.sources.registry import load_source
from labeler.tasks.base import make_shards
from labeler.tasks.rubric import RubricConfig, RubricTask
from labeler.tasks.rubric_questions import (
    GENERATE_SYSTEM,
    GENERATE_USER,
    RESPONSE_DESCRIPTION,
    RESPONSE_SCHEMA,
    generation_prompt,
    generation_sampling,
    read_questions,
)

#: what a schema-constrained model writes: the object, nothing around it
STRUCTURED = json.dumps({"decisions": [
    "Does the document discuss descriptive titles?", "  ",
    "Does the document discuss descriptive titles?",  # an exact repeat
    "Is the document about retrieval from titles?"]})
#: an unconstrained model asked for the same JSON: fenced, with a preamble
FENCED = 'Here you go:\n```json\n{"decisions": ["Is it about titles?"]}\n```'
#: a constrained answer cut at the token cap: not JSON any more
CUT = '{"decisions": ["Does the document discuss descriptive titles?", "Is the docu'
#: the right JSON but the wrong field: not the schema's object
WRONG_FIELD = '{"questions": ["Is it about titles?", "Is it about libraries?"]}'


@pytest.mark.parametrize(("output", "expected", "fallback"), [
    (STRUCTURED, ["Does the document discuss descriptive titles?",
                  "Is the document about retrieval from titles?"], False),
    (FENCED, ["Is it about titles?"], True),
    (CUT, ["Does the document discuss descriptive titles?"], True),
    (WRONG_FIELD, ["Is it about titles?", "Is it about libraries?"], True),
    ('{"decisions": []}', [], False),
    ("1. Is it about titles?\n2. Is it about libraries?",
     ["Is it about titles?", "Is it about libraries?"], True),
], ids=["structured", "fenced", "cut", "wrong-field", "empty-decisions", "numbered"])
def test_json_is_read_whole_and_anything_else_as_free_text(output, expected, fallback):
    assert read_questions(output) == (expected, fallback)


def test_the_prompt_is_the_experiments_with_its_field_description():
    [system, user] = generation_prompt("desk for kids")
    assert system.content.startswith(GENERATE_SYSTEM + "\n\n")  # verbatim, then the schema
    assert user.content == GENERATE_USER.format(query="desk for kids")
    assert json.loads(system.content.split("JSON schema:\n", 1)[1]) == json.loads(RESPONSE_SCHEMA)
    schema = json.loads(RESPONSE_SCHEMA)
    assert schema["required"] == ["decisions"]
    assert schema["properties"]["decisions"]["description"] == RESPONSE_DESCRIPTION == (
        "A list of concise yes/no questions whose affirmative answer indicates relevance to "
        "the search query.")
    assert generation_sampling(True).json_schema == RESPONSE_SCHEMA
    assert generation_sampling(False, seed=1).json_schema is None


def test_a_json_schema_is_in_the_cache_key_only_when_set():
    plain = Sampling(max_tokens=8)
    assert "json_schema" not in plain.key()  # unconstrained calls keep their old keys
    assert Sampling(max_tokens=8, json_schema=RESPONSE_SCHEMA).key()["json_schema"] == \
        RESPONSE_SCHEMA
    with pytest.raises(InputError, match="json_schema is not JSON"):
        Sampling(json_schema="{decisions")


@pytest.fixture(scope="module")
def shard():
    source = load_source("cisi-sample", limit=2)
    [one] = make_shards(source.queries, build_pools(source, pool="rp", k=3, encoder="bm25"), 2)
    return one


def _label(shard, structured: bool, answer):
    """The records of a rubric build of `shard` on a scripted backend with or without
    structured output; P(yes) 0.75 for every question."""
    task = RubricTask(RubricConfig(dataset="cisi-sample", k=3, rerank_k=2))
    backend = ScriptedBackend(answer=answer, structured_output=structured,
                              probs=lambda text, choices: {c: 0.3 if c == "yes" else 0.1
                                                           if c == "no" else 0.0
                                                           for c in choices})
    return task.label(task.calls(backend), shard), backend


def test_a_structured_backend_is_held_to_the_schema_and_the_choice_recorded(shard):
    # query 1 answers the schema's object; query 2's answer is cut, so read as free text
    def answer(text: str) -> str:
        return STRUCTURED if "descriptive titles" in text else CUT

    records, backend = _label(shard, True, answer)
    assert backend.schemas == [RESPONSE_SCHEMA]  # one call, held to the schema
    assert [(r["structured"], r["fallback"]) for r in records] == [(True, False), (True, True)]
    assert [q["text"] for q in records[0]["questions"]] == [
        "Does the document discuss descriptive titles?",
        "Is the document about retrieval from titles?"]
    assert [q["text"] for q in records[1]["questions"]] == [
        "Does the document discuss descriptive titles?"]
    stats = RubricTask.statistics([r | {"scored": 0, "ndcg@10": None} for r in records])
    assert (stats["structured"], stats["fallback"]) == (2, 1)


def test_an_unstructured_backend_is_asked_for_the_json_and_falls_back(shard):
    # the scripted backend without structured_output fails the test if sent a JSON schema
    def answer(text: str) -> str:
        assert RESPONSE_DESCRIPTION in text  # asked for the JSON all the same
        return STRUCTURED if "descriptive titles" in text else FENCED

    records, backend = _label(shard, False, answer)
    assert backend.schemas == [None]
    assert [(r["structured"], r["fallback"]) for r in records] == [(False, False),
                                                                  (False, True)]
    assert [q["text"] for q in records[1]["questions"]] == ["Is it about titles?"]
