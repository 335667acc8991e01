"""`labeler judge`: parse, call `labeler.workflows.judge.judge`, render its statistics."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from labeler.judge_methods import METHODS
from labeler.workflows.steps import DEFAULT_SHARD_SIZE


@click.command()
@click.option("--dataset", required=True,
              help="Source, as for `labeler build`: nq-sample, nq, tq, hotpotqa, ... or "
                   "jsonl:PATH.")
@click.option("--llm", help="The LLM that judges (alias, HF repo id, local folder or .gguf); "
                            "not needed for --method retrieval.")
@click.option("--method", type=click.Choice(list(METHODS)), required=True,
              help="pvs: pointwise verbalized selection; lvs: listwise verbalized selection; "
                   "lvr: listwise verbalized ranking; likelihood: P(pseudo-answer | q, d); "
                   "retrieval: the pool's order.")
@click.option("--with-answer", is_flag=True,
              help="pvs, lvs, lvr: show the LLM's own answer with all top-k passages as a "
                   "reference answer.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The submission to write (.jsonl); FILE.manifest.json goes beside it.")
@click.option("--pool", type=click.Choice(["rp", "hgp", "mcp"]), default="rp", show_default=True,
              help="rp: top-k retrieved; hgp: human gold; mcp: both (as for `labeler build`).")
@click.option("--k", type=click.IntRange(min=1), default=20, show_default=True,
              help="Retrieved passages per query.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries.")
@click.option("--run", type=click.Path(dir_okay=False, path_type=Path),
              help="TREC or JSONL run file to use instead of retrieval.")
@click.option("--encoder", help="Dense retriever for rp, as for `labeler build`.")
@click.option("--index", metavar="KIND[:NAME=N,...]",
              help="Dense index for rp, as for `labeler build`.")
@click.option("--corpus", metavar="NAME|FILE",
              help="Corpus to retrieve from instead of the dataset's own, as for `labeler build`.")
@click.option("--max-new-tokens", type=click.IntRange(min=1),
              help="Cap on each judgment's and pseudo-answer's new tokens [default: 256].")
@click.option("--backend", default="hf", show_default=True, help="LLM backend: hf or vllm.")
@click.option("--batch-size", type=click.IntRange(min=1),
              help="Prompts per forward pass (default: 8 for hf, 256 per call for vllm).")
@click.option("--device", help="Device for the LLM, e.g. cuda:0 [default: best available].")
@click.option("--shard-size", type=click.IntRange(min=1), default=DEFAULT_SHARD_SIZE,
              show_default=True, help="Queries per batch of judgments.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="LLM call and embedding cache (default: $LABELER_CACHE_DIR or ~/.cache/labeler).")
def judge(dataset, llm, method, with_answer, out, pool, k, limit, run, encoder, index, corpus,
          max_new_tokens, backend, batch_size, device, shard_size, cache_dir) -> None:
    """Judge the candidate passages of a dataset with one method, and write a submission.

    The pools are those `labeler build` labels for the same options; score the submission
    against the LLM's utility artifact with `labeler score OUT --against ARTIFACT`.
    """
    from labeler.judge_methods import Judge, JudgeConfig
    from labeler.llm.config import LLMConfig
    from labeler.workflows.judge import judge as run_judge

    config = JudgeConfig.from_options(dataset=dataset, pool=pool, k=k, limit=limit, run=run,
                                      encoder=encoder, index=index, corpus=corpus,
                                      method=method,
                                      with_answer=with_answer, max_new_tokens=max_new_tokens)
    model = None if llm is None else LLMConfig(llm, backend=backend, batch_size=batch_size,
                                               device=device)
    judged = run_judge(config, model, out=out, shard_size=shard_size, cache_dir=cache_dir)
    table = Table(title=f"{method}{' with answer' if with_answer else ''}: {dataset}, pool "
                        f"{pool} ({judged.kind})", title_justify="left")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for key, label, kind in Judge.rows:
        value = judged.stats.get(key)
        if value is not None:
            table.add_row(label, f"{value:.2f}" if kind == "mean" else str(value))
    console = Console()
    console.print(table)
    console.print(f"{judged.path}\n{judged.manifest_path}", soft_wrap=True, highlight=False)
