"""The task registry: every artifact kind is one task with a schema, a card and its rows."""

from __future__ import annotations

import pytest

from labeler.errors import UnknownNameError
from labeler.resources import card_path, load_schema
from labeler.tasks import TASKS, load_task
from labeler.tasks.base import Task, TaskConfig


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_has_a_schema_a_card_template_and_rows_from_its_statistics(name):
    task = load_task(name)
    assert issubclass(task, Task) and task.name == name
    assert issubclass(task.Config, TaskConfig)
    assert load_schema(name)["type"] == "object"
    assert card_path(name).read_text(encoding="utf-8").startswith("---\n{{ card_data }}\n---")
    stats = task.statistics([])
    assert {key for key, _, _ in task.rows} <= set(stats)  # every summary row can be filled
    assert {"pretty_name", "task_categories", "tags"} <= set(task.metadata)
    assert task.prompts and task(task.Config(dataset="nq-sample")).decoding


def test_an_unknown_kind_names_the_registered_ones():
    with pytest.raises(UnknownNameError) as error:
        load_task("utilty")
    assert error.value.line() == "unknown artifact 'utilty'. Did you mean 'utility'? Available: " \
        + ", ".join(sorted(TASKS))


def test_a_task_option_the_task_does_not_take_is_refused():
    from labeler.errors import InputError
    from labeler.tasks.base import TaskConfig

    assert TaskConfig.from_options(dataset="nq", with_likelihood=None).dataset == "nq"
    with pytest.raises(InputError, match="--with-likelihood does not apply to this artifact"):
        TaskConfig.from_options(dataset="nq", with_likelihood=True)
    with pytest.raises(InputError, match="--no-dedup does not apply to this artifact"):
        TaskConfig.from_options(dataset="nq", dedup=False)  # a True field's flag, given
