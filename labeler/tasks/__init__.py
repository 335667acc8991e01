"""Tasks: one module per labelling method on the shared `Task` base.

`TASKS` is the one list of artifact kinds; each kind has `schemas/<name>.schema.json` and
`cards/<name>.md.j2`. Task modules are imported only when used.
"""

from __future__ import annotations

from labeler.errors import UnknownNameError
from labeler.lazy import load_entry

#: artifact kind -> "module:class"; imported only when asked for.
TASKS = {
    "utility": "labeler.tasks.utility:UtilityTask",
    "seer": "labeler.tasks.seer:SeerTask",
    "rubric": "labeler.tasks.rubric:RubricTask",
}


def load_task(name: str):
    """The Task class of artifact kind `name`; UnknownNameError listing the kinds if none."""
    if name not in TASKS:
        raise UnknownNameError("artifact", name, sorted(TASKS))
    return load_entry(TASKS[name])


__all__ = ["TASKS", "load_task"]
