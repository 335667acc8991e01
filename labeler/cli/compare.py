"""`labeler compare`: parse, call `labeler.workflows.compare.compare`, render its tables."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from labeler.cli.options import cache_dir_option, model_options, model_settings
from labeler.cli.output import emit, json_option


@click.command()
@click.argument("artifacts", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="out",
              show_default=True,
              help="Artifacts root: the comparison goes to <out>/compare/<dataset>/<llms>/v<N>/ "
                   "(publish it with `labeler push`).")
@click.option("--llm", "llms", multiple=True, metavar="ALIAS=MODEL",
              help="Answer for the artifact of LLM ALIAS with MODEL instead of the model its "
                   "manifest names (repeat for several).")
@model_options()
@cache_dir_option
@json_option
def compare(artifacts: tuple[Path, ...], out: Path, llms: tuple[str, ...],
            cache_dir: Path | None, as_json: bool, **options) -> None:
    """Compare utility ARTIFACTS of one dataset by several LLMs (version folders).

    For every pair (A, B): the RAG accuracy of A answering with only B's gold utilitarian
    passages (the diagonal is A's own gold-utilitarian accuracy) and with the human gold ones,
    also on A's known and unknown queries; and how many passages their gold utilitarian sets
    share per query (over all queries), and with the human gold, beside the mean Jaccard
    index. Writes the tables, heatmaps and a card as one version folder. Each LLM answers
    as its manifest says it ran, or as --backend says (e.g. a served model: --backend openai
    --base-url URL).
    """
    from labeler.report.heatmap import cell_text
    from labeler.workflows.compare import VIEWS
    from labeler.workflows.compare import compare as run_compare

    overrides = {}
    for item in llms:
        alias, equals, model = item.partition("=")
        if not equals or not alias or not model:
            raise click.BadParameter(f"expected ALIAS=MODEL, got {item!r}", param_hint="--llm")
        overrides[alias] = model
    compared = run_compare(list(artifacts), out=out, llms=overrides, cache_dir=cache_dir,
                           served=model_settings(options))
    emit({"path": compared.path} | {view.name: getattr(compared, view.name).to_dicts()
                                    for view in VIEWS},
         _tables(compared, VIEWS, cell_text), [str(compared.path)], as_json=as_json)


def _tables(compared, views, cell_text):
    """One table per view of the comparison."""
    for view in views:
        frame = getattr(compared, view.name)
        table = Table(title=view.title, title_justify="left")
        for name, dtype in frame.schema.items():  # names whole; numbers' headers may wrap
            numeric = dtype.is_numeric()
            table.add_column(name.replace("_", " "), justify="right" if numeric else "left",
                             no_wrap=not numeric, overflow="fold")
        for row in frame.iter_rows():
            table.add_row(*(cell_text(v, view.scale) if isinstance(v, float) or v is None
                            else str(v) for v in row))
        yield table
