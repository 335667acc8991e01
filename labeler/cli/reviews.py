"""`labeler merge-reviews`: parse, call `labeler.view.verdicts.merge_reviews`, say the folder."""

from __future__ import annotations

from pathlib import Path

import click

from labeler.cli.output import emit, json_option


@click.command()
@click.argument("reviews", nargs=2, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="out",
              show_default=True,
              help="Artifacts root: the merged version goes to <out>/review/<dataset>/<llm>/v<N>/.")
@json_option
def merge_reviews(reviews: tuple[Path, Path], out: Path, as_json: bool) -> None:
    """Merge two REVIEWS (review version folders of the same labels) by reviewer id.

    Each (reviewer, llm, query, candidate) keeps its latest verdict; the result is written as
    the next review version.
    """
    from labeler.view.verdicts import merge_reviews as merge

    folder = merge(list(reviews), out=out)
    emit({"path": folder}, [], [str(folder)], as_json=as_json)
