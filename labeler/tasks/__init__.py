"""The one registry of artifact kinds: the labelling tasks `labeler build` runs (`TASKS`) and
every kind a version folder can hold (`KINDS`: the tasks, `compare`'s comparison, the
reproduced paper's `report` and `view`'s `review`).

A method is its module (a `labeler.tasks.base.Task`), its schema, its card and one entry
here; an installed package adds its own under the entry-point group `labeler.tasks`
(`[project.entry-points."labeler.tasks"] name = "module:TaskClass"`). Modules are imported
only when their kind is looked up.
"""

from __future__ import annotations

from labeler.lazy import Registry

#: labelling task -> its Task class, built-in and installed plugins' (group `labeler.tasks`)
TASKS = Registry("artifact", {
    "utility": "labeler.tasks.utility:UtilityTask",
    "seer": "labeler.tasks.seer:SeerTask",
    "rubric": "labeler.tasks.rubric:RubricTask",
}, group="labeler.tasks", base="labeler.tasks.base:Task")


class _Kinds(Registry):
    """The tasks, then the kinds that are not labelling tasks."""

    @property
    def entries(self) -> dict[str, str]:
        return {**TASKS.entries, **self._builtin}

    @property
    def packages(self) -> dict[str, str]:
        return TASKS.packages

    def plugin(self, name: str):
        return TASKS.plugin(name)


#: artifact kind -> its ArtifactKind class: the tasks, then the kinds other commands write
KINDS = _Kinds("artifact", {
    "compare": "labeler.tasks.compare:Comparison",
    "report": "labeler.report.kind:PaperReport",
    "review": "labeler.view.review:ReviewKind",
})


def load_task(name: str):
    """The Task class of labelling task `name`; UnknownNameError listing the tasks if none."""
    return TASKS[name]


def load_kind(name: str):
    """The class of artifact kind `name`; UnknownNameError listing the kinds if none."""
    return KINDS[name]


__all__ = ["KINDS", "TASKS", "load_kind", "load_task"]
