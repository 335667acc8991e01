"""`labeler build`: parse, call `labeler.build.build`, render the summary."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

#: (stats key, row label, how to show it) — the paper's Table 3 rows first.
ROWS = (
    ("queries", "queries", "count"),
    ("candidates", "candidate passages labelled", "count"),
    ("known_share", "known (closed-book correct)", "share"),
    ("mean_utilitarian", "gold utilitarian passages / query", "mean"),
    ("utilitarian_query_share", "queries with a utilitarian passage", "share"),
    ("human_gold_in_pool", "human gold passages in the pools", "count"),
    ("human_gold_utilitarian_share", "human gold passages that are utilitarian", "share"),
    ("accuracy_no_passage", "RAG accuracy: no passage", "share"),
    ("accuracy_all", "RAG accuracy: all candidates together", "share"),
    ("accuracy_utilitarian", "RAG accuracy: gold utilitarian only", "share"),
    ("accuracy_human_gold", "RAG accuracy: human gold only", "share"),
)


@click.command()
@click.option("--dataset", required=True,
              help="Source: nq-sample, nq, tq, msmarco-fqa, hotpotqa, fever, 2wiki or jsonl:PATH.")
@click.option("--llm", "llms", multiple=True, required=True,
              help="Model alias, HF repo id, local folder or .gguf; repeat to label for several.")
@click.option("--artifact", default="utility", show_default=True, help="What to label.")
@click.option("--pool", type=click.Choice(["rp", "hgp", "mcp"]), default="rp", show_default=True,
              help="rp: top-k retrieved; hgp: human gold; mcp: both, deduplicated.")
@click.option("--k", type=click.IntRange(min=1), default=20, show_default=True,
              help="Retrieved passages per query.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries.")
@click.option("--backend", default="hf", show_default=True, help="LLM backend: hf or vllm.")
@click.option("--batch-size", type=click.IntRange(min=1),
              help="Prompts per forward pass (default: 8 for hf, 256 per call for vllm).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="out",
              show_default=True, help="Artifacts root folder.")
@click.option("--version", help="Version to write (default: the next free integer).")
@click.option("--run", type=click.Path(dir_okay=False, path_type=Path),
              help="TREC or JSONL run file to use instead of retrieval.")
@click.option("--encoder", help="Dense retriever for rp: bge-m3 (default, falls back to the "
              "bundled minilm offline), minilm, or an HF repo id / local folder.")
@click.option("--corpus", type=click.Path(path_type=Path),
              help="FlashRAG-format corpus ({id, contents}) for jsonl: datasets.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="LLM call and embedding cache (default: $LABELER_CACHE_DIR or ~/.cache/labeler).")
@click.option("--with-likelihood", is_flag=True,
              help="Also record log P(gold answer | q, d) per candidate.")
def build(dataset, llms, artifact, pool, k, limit, backend, batch_size, out, version, run,
          encoder, corpus, cache_dir, with_likelihood) -> None:
    """Label which candidate passages are gold utilitarian for each LLM, and write artifacts.

    A passage is gold utilitarian for an LLM on a query iff the LLM answers correctly given
    that passage alone and wrongly with no passage (Zhang et al., LLM-specific utility).
    """
    from labeler.build import build as build_labels

    built = build_labels(
        dataset, llms, artifact=artifact, pool=pool, k=k, limit=limit, backend=backend,
        batch_size=batch_size, out=out, version=version, run=run, encoder=encoder, corpus=corpus,
        cache_dir=cache_dir, with_likelihood=with_likelihood,
    )
    table = Table(title=f"{artifact} labels: {dataset}, pool {pool}")
    table.add_column("statistic")
    for b in built:
        table.add_column(b.llm, justify="right")
    for key, label, kind in ROWS:
        table.add_row(label, *(_show(b.stats.get(key), kind) for b in built))
    console = Console()
    console.print(table)
    for b in built:
        console.print(f"{b.llm}: {b.path}", soft_wrap=True, highlight=False)


def _show(value, kind: str) -> str:
    if value is None:
        return "n/a"
    if kind == "share":
        return f"{value:.1%}"
    if kind == "mean":
        return f"{value:.2f}"
    return str(value)
