"""`labeler validate`: parse, call `labeler.workflows.validate.check_path`, render."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from labeler.cli.output import emit, json_option


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--schema", metavar="NAME",
              help="Record schema for a JSONL file outside a version folder, e.g. utility.")
@json_option
@click.pass_context
def validate(ctx: click.Context, path: Path, schema: str | None, as_json: bool) -> None:
    """Check an artifact version folder (or a folder of them) or a JSONL file.

    Prints the first 100 problems as FILE:LINE: MESSAGE and counts the rest (a file is read
    no further than its 100th problem), then a summary table; exits 1 on any problem.
    """
    from labeler.terminal import escape
    from labeler.workflows.validate import check_path

    checks = check_path(path, schema=schema)
    total = sum(check.count for check in checks)
    shown = sum(len(check.problems) for check in checks)
    if not as_json:
        for check in checks:
            for problem in check.problems:
                click.echo(escape(problem))
        if total > shown:
            click.echo(f"... and {total - shown} more problem(s), not shown")
        for check in checks:
            if check.unchecked:
                click.echo(f"{escape(check.name)}: stopped after {len(check.problems)} problems; "
                           f"its last {check.unchecked} line(s) not checked")
    data = {"path": path, "problems": total,
            "files": [{"file": c.name, "schema": c.schema, "lines": c.lines,
                       "problems": list(c.problems), "more": c.more,
                       "unchecked": c.unchecked} for c in checks]}
    emit(data, [_table(path, checks)],
         [f"{total} problem(s) in {len(checks)} file(s)"
          + (" (the lines after a file's 100th problem not checked)"
             if any(c.unchecked for c in checks) else "") if total
          else f"valid: {len(checks)} file(s), no problems"], as_json=as_json)
    ctx.exit(1 if total else 0)


def _table(path: Path, checks: list) -> Table:
    from labeler.terminal import markup_safe

    table = Table(title=f"validate {markup_safe(path)}")
    table.add_column("file")
    table.add_column("schema")
    table.add_column("lines", justify="right")
    table.add_column("problems", justify="right")
    for check in checks:
        table.add_row(markup_safe(check.name), check.schema or "-",
                      "-" if check.lines is None else str(check.lines),
                      f"[red]{check.count}[/red]" if check.count else "[green]0[/green]")
    return table
