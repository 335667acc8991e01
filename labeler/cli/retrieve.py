"""`labeler retrieve`: parse, call `labeler.workflows.retrieve.retrieve_run`, render."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from labeler.cli.options import cache_dir_option, data_options, executor_options
from labeler.cli.output import emit, json_option


@click.command()
@data_options()
@executor_options("the corpus's missing shards are encoded", "encoder")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="TREC run file to write.")
@cache_dir_option
@json_option
def retrieve(dataset, corpus, limit, k, encoder, index, bm25_fields, bm25_stemmer, bm25_k1,
             bm25_b, executor, ray_address, workers, out, cache_dir, as_json) -> None:
    """Retrieve the top-k passages for every query of a dataset into a TREC run file: dense,
    or BM25 with --encoder bm25.

    Corpus embeddings are kept on disk by encoder and corpus hash, in shards of 16,384
    passages: an encoding stopped part-way resumes at its missing shards. The run can be
    given back to `labeler build --run`.
    """
    from labeler.executors import load_executor
    from labeler.workflows.retrieve import retrieve_run

    runner = load_executor(executor, address=ray_address, workers=workers)
    bm25 = {"fields": bm25_fields, "stemmer": bm25_stemmer, "k1": bm25_k1, "b": bm25_b}
    stats = retrieve_run(dataset, out, corpus=corpus, limit=limit, k=k, encoder=encoder,
                         index=index, cache_dir=cache_dir, executor=runner, bm25=bm25)
    emit(stats, [_table(stats)], [f"run written to {stats['output']}"], as_json=as_json)


def _table(stats: dict) -> Table:
    table = Table(title=f"retrieve {stats['dataset']}", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    recall, searched = stats["gold_recall"], stats["encoder"].get("index")  # none: BM25
    rows = [("queries", f"{stats['queries']:,}"),
            ("corpus passages", f"{stats['passages']:,}"),
            ("encoder", stats["encoder"]["model_id"])]
    if searched is not None:
        params = ", ".join(f"{p}={v}" for p, v in searched.items()
                           if p not in ("kind", "recall_at_k", "recall_k", "recall_queries")
                           and v is not None)
        rows.append(("index", f"{searched['kind']} ({params or 'exact'})"))
    if searched is not None and "recall_at_k" in searched:
        rows.append((f"recall@{searched['recall_k']} vs exact",
                     f"{searched['recall_at_k']:.1%} ({searched['recall_queries']} queries)"))
    for label, value in (
        *rows,
        ("k", str(stats["k"])),
        (f"human gold in top {stats['k']}", "n/a (no gold)" if recall is None else f"{recall:.1%}"),
        ("retrieval time", f"{stats['seconds']:.1f} s"),
        ("source revision", stats["revision"][:16]),
    ):
        table.add_row(label, value)
    return table
