"""`labeler analyze`: the paper's analyses of built artifacts; parse, call one workflow, render."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from labeler.cli.options import cache_dir_option
from labeler.cli.output import emit, json_option


@click.group()
def analyze() -> None:
    """Analyses of built artifacts (the utility paper's figures)."""


@analyze.command()
@click.argument("artifacts", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="out",
              show_default=True, help="Folder for perplexity.png and perplexity.csv.")
@cache_dir_option
@json_option
def perplexity(artifacts: tuple[Path, ...], out: Path, cache_dir: Path | None,
               as_json: bool) -> None:
    """Perplexity of each utility ARTIFACT's LLM on its human gold passages, those it found
    gold utilitarian and the others, alone and after the query (the utility paper's Fig. 5).
    The LLM runs on the hf backend, whichever built the artifact."""
    from labeler.workflows.perplexity import perplexity as run_perplexity

    result = run_perplexity(list(artifacts), cache_dir=cache_dir)
    written = result.save(out)
    table = Table(title="Perplexity on human gold passages (Fig. 5)", title_justify="left")
    for column in result.table.columns:
        table.add_column(column, justify="right" if column.startswith(("ppl", "pass")) else
                         "left")
    for row in result.table.rows():
        table.add_row(*(("n/a" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v))
                        for v in row))
    emit({"rows": result.table.to_dicts(), "files": written}, [table], map(str, written),
         as_json=as_json)
