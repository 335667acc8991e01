"""The kinds registry: every artifact kind has a schema, a card template and summary rows its
statistics fill."""

from __future__ import annotations

import pytest

from labeler.artifacts.kinds import ArtifactKind
from labeler.errors import UnknownNameError
from labeler.resources import card_path, load_schema
from labeler.tasks import KINDS, TASKS, load_kind


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_has_a_schema_a_card_template_and_its_metadata(name):
    kind = load_kind(name)
    assert issubclass(kind, ArtifactKind) and kind.name == name
    assert load_schema(name)["type"] == "object"
    assert card_path(name).read_text(encoding="utf-8").startswith("---\n{{ card_data }}\n---")
    assert {key for key, _, _ in kind.rows} <= set(kind.statistics([]))
    assert {"pretty_name", "task_categories", "tags"} <= set(kind.metadata)


def test_the_tasks_are_kinds_and_an_unknown_kind_names_them_all():
    assert set(TASKS) < set(KINDS)
    with pytest.raises(UnknownNameError) as error:
        load_kind("compar")
    assert error.value.line() == "unknown artifact 'compar'. Did you mean 'compare'? " \
        "Available: " + ", ".join(sorted(KINDS))
