"""`labeler build`: parse, call `labeler.workflows.build.build`, render the task's summary rows."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from labeler.cli.retrieve import INDEX_HELP, executor_options
from labeler.tasks import TASKS
from labeler.workflows.steps import DEFAULT_SHARD_SIZE


@click.command()
@click.option("--dataset", required=True,
              help="Source: nq-sample, nq, tq, msmarco-fqa, hotpotqa, fever, 2wiki, "
                   "nq-tevatron, tq-tevatron-distant, hotpotqa-distractor, cisi-sample, "
                   "jsonl:PATH or search:PATH (queries TSV or JSONL).")
@click.option("--llm", "llms", multiple=True, required=True,
              help="Model alias, HF repo id, local folder or .gguf; repeat to label for several.")
@click.option("--artifact", default="utility", show_default=True,
              help=f"What to label: {', '.join(TASKS)}.")
@click.option("--pool", type=click.Choice(["rp", "hgp", "mcp"]), default="rp", show_default=True,
              help="rp: top-k retrieved; hgp: human gold; mcp: both, deduplicated.")
@click.option("--k", type=click.IntRange(min=1),
              help="Retrieved passages per query [default: 20; seer: 5, as SEER].")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries.")
@click.option("--backend", default="hf", show_default=True, help="LLM backend: hf or vllm.")
@click.option("--batch-size", type=click.IntRange(min=1),
              help="Prompts per forward pass (default: 8 for hf, 256 per call for vllm).")
@click.option("--device", help="Device for the LLMs, e.g. cuda:0 [default: best available].")
@click.option("--tensor-parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="vllm: GPUs each model is split over (per Ray worker with --executor ray).")
@executor_options("local: shards one after another here; ray: on Ray workers, one model each "
                  "(pip install 'labeler[ray]').", "model")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="out",
              show_default=True, help="Artifacts root folder.")
@click.option("--version", help="Version to write (default: the next free integer).")
@click.option("--shard-size", type=click.IntRange(min=1), default=DEFAULT_SHARD_SIZE,
              show_default=True,
              help="Queries per shard: each shard is written when done; a rerun resumes at "
                   "the unfinished ones.")
@click.option("--run", type=click.Path(dir_okay=False, path_type=Path),
              help="TREC or JSONL run file to use instead of retrieval.")
@click.option("--encoder", help="Retriever for rp: bm25, or a dense bge-m3 (default, falls back "
              "to the bundled minilm offline), minilm, or an HF repo id / local folder "
              "[rubric: bm25].")
@click.option("--index", metavar="KIND[:NAME=N,...]", help=INDEX_HELP)
@click.option("--corpus", metavar="NAME|FILE",
              help="Corpus to retrieve from instead of the dataset's own (nq, tq, hotpotqa, "
                   "fever, 2wiki: kilt-w100 by default): kilt-w100 (KILT's Wikipedia in DPR's "
                   "100-word passages, the paper's), wiki-dpr (DPR's 21M psgs_w100), "
                   "msmarco-passage, kilt-wikipedia (KILT paragraphs), or a FlashRAG-format "
                   "file ({id, contents}).")
@click.option("--qrels", type=click.Path(dir_okay=False, path_type=Path),
              help="TREC qrels with the queries' graded human judgments (rubric: for NDCG).")
@click.option("--max-questions", type=click.IntRange(min=1),
              help="rubric: questions kept per query [default: 10].")
@click.option("--weight", type=float, help="rubric: w in fused = BM25 + w · rubric [default: 10].")
@click.option("--rerank-k", type=click.IntRange(min=1),
              help="rubric: the BM25 top K the LLM scores [default: 100].")
@click.option("--single-question", is_flag=True,
              help="rubric: also score the single-question baseline (\"Is this document "
                   "relevant to this query?\").")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="LLM call and embedding cache (default: $LABELER_CACHE_DIR or ~/.cache/labeler).")
@click.option("--dry-run", is_flag=True,
              help="Check everything and print the plan (queries, passages, embeddings, LLM "
                   "calls); load no model and write nothing.")
@click.option("--with-likelihood", is_flag=True,
              help="utility: also record log P(gold answer | q, d) per candidate.")
@click.option("--max-new-tokens", type=click.IntRange(min=1),
              help="utility: cap on each answer's new tokens [default: 256; the paper's code: "
                   "4096]; answers that reach it are counted in the manifest and card. seer: "
                   "cap on each extraction [default: 256].")
@click.option("--answer-extractor", metavar="MODEL",
              help="LLM that extracts entity answers from sentence answers first; required "
                   "for msmarco-fqa (the paper used qwen3-32b).")
@click.option("--samples", type=click.IntRange(min=1),
              help="seer: extractions sampled per query [default: 10].")
@click.option("--extractor", metavar="MODEL",
              help="seer: the LLM that extracts [default: the --llm; SEER's: llama2-7b-chat].")
@click.option("--ngram", type=click.IntRange(min=1),
              help="seer: word n-grams compared to find near-duplicates [default: 3].")
@click.option("--duplicate-at", type=click.FloatRange(0, 1, min_open=True),
              help="seer: n-gram Jaccard from which an extraction is a duplicate [default: 0.8].")
@click.option("--faithfulness", metavar="SCORER",
              help="seer: llm (the generator as judge, default), alignscore[:CHECKPOINT] "
                   "(SEER's) or nli:MODEL.")
@click.option("--sbert", metavar="MODEL",
              help="seer: sentence encoder of conciseness [default: the bundled MiniLM].")
@click.option("--tau", type=click.FloatRange(0, min_open=True),
              help="seer: temperature of the CoV weights' softmax [default: 1.0].")
def build(dataset, llms, artifact, pool, k, limit, backend, batch_size, device, tensor_parallel,
          executor, ray_address, workers, out, version, shard_size, run, encoder, index, corpus,
          cache_dir, dry_run, with_likelihood, max_new_tokens, answer_extractor, **task_options
          ) -> None:
    """Label the candidate passages of a dataset for each LLM, and write one artifact each.

    utility (the default): a passage is gold utilitarian for an LLM on a query iff the LLM
    answers correctly given that passage alone and wrongly with no passage (Zhang et al.,
    LLM-specific utility).

    seer: sampled evidence extractions of the top passages, scored by three experts, ranked by
    their CoV-weighted sum and paired with lambda weights for preference training (SEER).

    rubric: the LLM writes yes/no questions per query; each BM25 top-K document scores
    Σ P(yes) over them, fused with BM25 (bag-of-decisions reranking); search data:
    cisi-sample, or search:QUERIES (TSV or JSONL) with --corpus and --qrels.
    """
    from labeler.executors import load_executor
    from labeler.llm.config import LLMConfig
    from labeler.tasks import load_task
    from labeler.workflows.build import build as build_labels

    task = load_task(artifact)
    config = task.Config.from_options(dataset=dataset, pool=pool, k=k, limit=limit, run=run,
                                      encoder=encoder, index=index, corpus=corpus,
                                      with_likelihood=with_likelihood,
                                      max_new_tokens=max_new_tokens,
                                      answer_extractor=answer_extractor, **task_options)
    models = [LLMConfig(name, backend=backend, batch_size=batch_size, device=device,
                        tensor_parallel=tensor_parallel) for name in llms]
    if dry_run:
        from labeler.workflows.plan import plan

        table = Table(title=f"plan: {artifact} labels of {dataset}, pool {pool}, k {config.k} "
                            "(dry run: no model loaded, nothing written)")
        for column in ("step", "count", "how known"):
            table.add_column(column, justify="right" if column == "count" else "left")
        for row in plan(artifact, config, models, out=out, version=version, cache_dir=cache_dir):
            table.add_row(*row)
        Console().print(table)
        return
    runner = load_executor(executor, address=ray_address, workers=workers)
    built = build_labels(artifact, config, models, out=out, version=version,
                         shard_size=shard_size, cache_dir=cache_dir, executor=runner)
    table = Table(title=f"{artifact} labels: {dataset}, pool {pool}, k {config.k}")
    table.add_column("statistic")
    for b in built:
        table.add_column(b.llm, justify="right")
    for key, label, kind in task.rows:
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
