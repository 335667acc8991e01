"""The compiled schemas judge validity exactly as jsonschema does, and `check` still names
jsonschema's first problem."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest

from labeler.errors import InputError
from labeler.lines import read_jsonl
from labeler.resources import schema_names
from labeler.schema_compiler import Unsupported, compile_schema
from labeler.schemas import _compiled, _validator, check, schema_problems

RECORDS = Path(__file__).parent / "artifacts" / "fixtures" / "utility_nq_sample_smollm2.jsonl"
#: values a mutation puts in a field's place: each JSON type, and edge values of each
ODD = [None, True, False, 0, 1, 1.0, 1.5, -1, 2, "", "x", "0" * 64, [], ["x"], [1, 1], {},
       {"x": 1}]


def _paths(value, path=()):
    """Every path into `value` (dict keys and list positions)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _mutants(record: dict, rng: random.Random, count: int):
    """`count` copies of `record`, each with one field replaced, removed or added."""
    paths = [p for p in _paths(record) if p]
    for _ in range(count):
        mutant = copy.deepcopy(record)
        *parent_path, last = rng.choice(paths)
        parent = mutant
        for part in parent_path:
            parent = parent[part]
        action = rng.random()
        if action < 0.15 and isinstance(parent, dict):
            del parent[last]
        elif action < 0.25 and isinstance(parent, dict):
            parent["unexpected"] = rng.choice(ODD)
        else:
            parent[last] = copy.deepcopy(rng.choice(ODD))
        yield mutant


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return [record for _, record in read_jsonl(RECORDS)]


def test_every_shipped_schema_compiles():
    assert all(_compiled(name) is not None for name in schema_names())


def test_compiled_and_jsonschema_agree_on_valid_and_broken_records(records):
    rng = random.Random(0)
    mutants = [m for r in records for m in _mutants(r, rng, 150)]
    assert all(_compiled("utility")(r) for r in records)
    verdicts = {name: [(_compiled(name)(m), _validator(name).is_valid(m)) for m in mutants]
                for name in schema_names()}
    for name, pairs in verdicts.items():
        assert [c for c, _ in pairs] == [j for _, j in pairs], name
    assert 0 < sum(j for j, _ in verdicts["utility"]) < len(mutants)  # both kinds met


def test_check_names_the_first_problem_as_jsonschema_sorts_them(records):
    broken = copy.deepcopy(records[0])
    broken["candidates"][0]["rank"] = 0
    del broken["qid"]
    with pytest.raises(InputError) as raised:
        check(broken, "utility", path="data.jsonl", line=3)
    field, message = schema_problems(broken, "utility")[0]
    assert (raised.value.field_name, field) == ("candidates[0].rank", field)
    assert message in raised.value.line()


def test_an_unknown_keyword_is_refused():
    with pytest.raises(Unsupported, match="patternProperties"):
        compile_schema({"patternProperties": {"^x": {"type": "string"}}}, {})
