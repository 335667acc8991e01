"""Tasks: one module per labelling method on the shared `Task` base.

`TASKS` names the artifact kinds `labeler build` labels; each is registered in
`labeler.artifacts.kinds.KINDS`. Task modules are imported only when used.
"""

from __future__ import annotations

from labeler.artifacts.kinds import load_kind
from labeler.errors import UnknownNameError

#: the artifact kinds that are labelling tasks
TASKS = ("utility", "seer", "rubric")


def load_task(name: str):
    """The Task class of artifact kind `name`; UnknownNameError listing the tasks if none."""
    if name not in TASKS:
        raise UnknownNameError("artifact", name, sorted(TASKS))
    return load_kind(name)


__all__ = ["TASKS", "load_task"]
