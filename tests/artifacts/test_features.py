"""features(): the `datasets` types of a table's records, from its schema and its records."""

from __future__ import annotations

import pytest

from labeler.artifacts.features import Shape, features
from labeler.errors import ArtifactError
from labeler.resources import schema_names


def _shape(*records: dict) -> Shape:
    shape = Shape()
    for record in records:
        shape.add(record)
    return shape


@pytest.mark.parametrize("schema", [n for n in schema_names()
                                    if n != "manifest" and not n.startswith("submission")])
def test_every_table_schema_gives_features_datasets_reads(schema):
    from datasets import Features

    typed = features(schema, Shape())
    assert Features._from_yaml_list(typed)._to_yaml_list() == typed


def test_null_enum_and_union_types_take_the_declared_type():
    """A rubric candidate: `label` null in every record, `rubric` and `single` anyOf [number,
    null]; a compare row: `accuracy` ["number", "null"]."""
    candidates = {f["name"]: f for f in features("rubric-candidates", Shape())}
    assert candidates["label"] == {"name": "label", "dtype": "int64"}
    assert candidates["single"] == {"name": "single", "dtype": "float64"}
    assert candidates["p_yes"] == {"name": "p_yes", "list": "float64"}
    compare = {f["name"]: f for f in features("compare", Shape())}
    assert compare["accuracy"] == {"name": "accuracy", "dtype": "float64"}


def test_seer_follows_refs_into_its_own_and_another_schema():
    seer = {f["name"]: f for f in features("seer", Shape())}
    assert seer["skipped"] == {"name": "skipped", "dtype": "string"}  # enum [null, "...", ...]
    [scores] = [f for f in seer["extractions"]["list"] if f["name"] == "scores"]
    assert [f["name"] for f in scores["struct"]] == [
        "faithfulness", "helpfulness", "conciseness", "weighted"]
    pairs = {f["name"]: f for f in features("seer-pairs", Shape())}
    assert pairs["chosen_scores"]["struct"] == scores["struct"]  # urn:labeler:schemas:seer:1
    assert pairs["prompt"]["list"] == [{"name": "role", "dtype": "string"},
                                       {"name": "content", "dtype": "string"}]


def test_open_maps_take_their_keys_and_optional_properties_appear_when_held():
    rubric = {f["name"]: f for f in features("rubric", _shape(
        {"qid": "1", "relevance": {"d7": 1}}, {"qid": "2", "relevance": {"d2": 2, "d7": 0}}))}
    assert rubric["relevance"] == {"name": "relevance", "struct": [
        {"name": "d7", "dtype": "int64"}, {"name": "d2", "dtype": "int64"}]}
    def candidate(*records: dict) -> list[str]:
        [fields] = [f["list"] for f in features("utility", _shape(*records))
                    if f["name"] == "candidates"]
        return [f["name"] for f in fields]

    assert "loglikelihood" not in candidate({"candidates": [{"pid": "p"}]})
    assert candidate({"candidates": [{"pid": "p", "loglikelihood": -1.5}]})[-1] == "loglikelihood"


def test_a_key_the_schema_does_not_type_is_named():
    with pytest.raises(ArtifactError, match=r"cannot state the type of 'rag': the records "
                                            r"hold keys it does not type \('extra'\)"):
        features("utility", _shape({"rag": {"extra": 1}}))
