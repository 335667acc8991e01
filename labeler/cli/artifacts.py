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

    Prints every problem as FILE:LINE: MESSAGE, then a summary table; exits 1 on any problem.
    """
    from labeler.workflows.validate import check_path

    checks = check_path(path, schema=schema)
    total = sum(len(check.problems) for check in checks)
    if not as_json:
        for check in checks:
            for problem in check.problems:
                click.echo(problem)
    data = {"path": path, "problems": total,
            "files": [{"file": c.name, "schema": c.schema, "lines": c.lines,
                       "problems": list(c.problems)} for c in checks]}
    emit(data, [_table(path, checks)],
         [f"{total} problem(s) in {len(checks)} file(s)" if total
          else f"valid: {len(checks)} file(s), no problems"], as_json=as_json)
    ctx.exit(1 if total else 0)


def _table(path: Path, checks: list) -> Table:
    table = Table(title=f"validate {path}")
    table.add_column("file")
    table.add_column("schema")
    table.add_column("lines", justify="right")
    table.add_column("problems", justify="right")
    for check in checks:
        table.add_row(check.name, check.schema or "-",
                      "-" if check.lines is None else str(check.lines),
                      f"[red]{len(check.problems)}[/red]" if check.problems else "[green]0[/green]")
    return table
