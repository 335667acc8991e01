"""`labeler plugins`: parse, call `labeler.plugins.installed`, render."""

from __future__ import annotations

import click
from rich.table import Table

from labeler.cli.output import emit, json_option


@click.command()
@json_option
def plugins(as_json: bool) -> None:
    """List the installed plugins: their tasks, backends and executors, and any that fail to load.

    A plugin is an entry point an installed package declares in the group labeler.tasks,
    labeler.backends or labeler.executors; one that fails to load is named with its error,
    and every other command skips it.
    """
    from labeler.executors import EXECUTORS
    from labeler.llm import BACKENDS
    from labeler.plugins import installed
    from labeler.tasks import TASKS
    from labeler.terminal import markup_safe

    found = installed({registry.group: registry for registry in (TASKS, BACKENDS, EXECUTORS)})
    data = {"plugins": [{"package": p.package, "version": p.version, "group": p.group,
                         "name": p.name, "value": p.value, "error": p.error} for p in found]}
    table = Table(title="installed plugins")
    for column in ("package", "version", "kind", "name", "entry point", "status"):
        table.add_column(column)
    for p in found:
        table.add_row(markup_safe(p.package), markup_safe(p.version),
                      p.group.removeprefix("labeler.").rstrip("s"), markup_safe(p.name),
                      markup_safe(p.value), "[green]ok[/green]" if p.error is None
                      else f"[red]fails to load[/red]: {markup_safe(p.error)}")
    failed = sum(p.error is not None for p in found)
    line = f"{len(found)} plugin(s) in {len({p.package for p in found})} package(s)" + (
        f"; {failed} fail to load" if failed else "")
    if not found:
        line = "no plugins installed (entry points in labeler.tasks, labeler.backends, " \
               "labeler.executors)"
    emit(data, [table] if found else [], [line], as_json=as_json)
