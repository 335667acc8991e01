"""`labeler retrieve`: parse, call `labeler.workflows.retrieve.retrieve_run`, render."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

INDEX_HELP = ("Dense index: flat (exact, the default), ivf[:nlist=N,nprobe=N,pq=M,refine=R] "
              "(FAISS IVF, lists on disk; pq=M compresses to M bytes a vector; refine=R "
              "re-scores R x k candidates exactly) or hnsw[:M=N,efConstruction=N,efSearch=N]; "
              "built once beside the embeddings. ivf and hnsw report their recall@k against "
              "exact search.")


def executor_options(where: str, loaded: str):
    """--executor, --ray-address and --workers: `where` says what each executor runs and
    `loaded` what each Ray worker loads once (`labeler build` and `labeler retrieve`)."""
    options = [
        click.option("--executor", default="local", show_default=True, help=where),
        click.option("--ray-address", metavar="ADDR", help="ray: the cluster to run on, e.g. "
                     "head:6379 [default: start Ray here]."),
        click.option("--workers", type=click.IntRange(min=1),
                     help=f"ray: workers (one loaded {loaded} each) [default: as many as fit]."),
    ]

    def add(command):
        for option in reversed(options):
            command = option(command)
        return command
    return add


@click.command()
@click.option("--dataset", required=True,
              help="Source: nq-sample, nq, tq, msmarco-fqa, hotpotqa, fever, 2wiki, "
                   "nq-tevatron, tq-tevatron-distant, hotpotqa-distractor or jsonl:PATH.")
@click.option("--corpus", metavar="NAME|FILE",
              help="Corpus to retrieve from instead of the dataset's own (nq, tq, hotpotqa, "
                   "fever, 2wiki: kilt-w100 by default): kilt-w100 (KILT's Wikipedia in DPR's "
                   "100-word passages, the paper's), wiki-dpr (DPR's 21M psgs_w100), "
                   "msmarco-passage, kilt-wikipedia (KILT paragraphs), or a FlashRAG-format "
                   "file ({id, contents}).")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries.")
@click.option("--k", type=click.IntRange(min=1), default=20, show_default=True,
              help="Passages per query.")
@click.option("--encoder", help="bge-m3, minilm, or any FlagEmbedding model "
              "[default: bge-m3, else the bundled minilm]")
@click.option("--index", metavar="KIND[:NAME=N,...]", help=INDEX_HELP)
@executor_options("Where the corpus's missing shards are encoded: local (here) or ray (on "
                  "Ray workers, one encoder each; pip install 'labeler[ray]').", "encoder")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="TREC run file to write.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Embedding cache (default: $LABELER_CACHE_DIR or ~/.cache/labeler).")
def retrieve(dataset, corpus, limit, k, encoder, index, executor, ray_address, workers, output,
             cache_dir) -> None:
    """Dense-retrieve the top-k passages for every query of a dataset into a TREC run file.

    Corpus embeddings are kept on disk by encoder and corpus hash, in shards of 16,384
    passages: an encoding stopped part-way resumes at its missing shards. The run can be
    given back to `labeler build --run`.
    """
    from labeler.executors import load_executor
    from labeler.workflows.retrieve import retrieve_run

    runner = load_executor(executor, address=ray_address, workers=workers)
    stats = retrieve_run(dataset, output, corpus=corpus, limit=limit, k=k, encoder=encoder,
                         index=index, cache_dir=cache_dir, executor=runner)
    table = Table(title=f"retrieve {stats['dataset']}", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    recall, searched = stats["gold_recall"], stats["encoder"]["index"]
    params = ", ".join(f"{p}={v}" for p, v in searched.items()
                       if p not in ("kind", "recall_at_k", "recall_k", "recall_queries")
                       and v is not None)
    rows = [("queries", f"{stats['queries']:,}"),
            ("corpus passages", f"{stats['passages']:,}"),
            ("encoder", stats["encoder"]["model_id"]),
            ("index", f"{searched['kind']} ({params or 'exact'})")]
    if "recall_at_k" in searched:
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
    Console().print(table)
    click.echo(f"run written to {stats['output']}")
