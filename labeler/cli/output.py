"""One output sink for every command: rich tables for people, `--json` for machines.

Every command that prints a result table takes `--json` (`json_option`) and hands `emit` both
renderings: the tables (and closing lines, e.g. the folder written) or the same result as one
JSON document on stdout, nothing else there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from labeler.terminal import escape

if TYPE_CHECKING:
    from rich.console import Console

#: off a terminal, the results console's width: wider than any table, which so takes its
#: natural width and wraps no cell
UNBOUNDED = 100_000

#: the `--json` flag, the same on every command
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print the result as one JSON document on stdout, no table.")


def emit(data: Any, tables: Iterable = (), lines: Iterable[str] = (), *,
         as_json: bool) -> None:
    """Print `data` as JSON (paths and other objects as their text), or `tables` then `lines`
    through rich; `tables` may be a generator, built only when they are shown."""
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
        return
    console = results_console()
    for table in tables:
        console.print(table)
    for line in lines:  # a path or a name in them may be the user's: its controls escaped
        console.print("\n".join(escape(part) for part in line.split("\n")), soft_wrap=True,
                      highlight=False, markup=False)


def results_console() -> Console:
    """The rich console of results, on stdout: a terminal's width, else unbounded, so that in
    a log or a pipe no table cuts a path or a name across lines (it is copied whole)."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=UNBOUNDED)
