"""`labeler reproduce`: parse, call the `labeler.workflows.reproduce` command's run, render."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from labeler.cli.options import (
    INDEX_HELP,
    DatasetName,
    cache_dir_option,
    executor_options,
    model_options,
    model_settings,
    stacked,
)
from labeler.cli.output import emit, json_option
from labeler.report.paper import DATASETS, LLMS
from labeler.sources.search_experiments import ARMS
from labeler.workflows.reproduce.utility_steps import MAX_NEW_TOKENS


def _run_options(steps: str, dry_run: str):
    """--out, --shard-size, --cache-dir, --dry-run (`dry_run`: its help) and --json of a
    command whose steps write under <out>/`steps`/."""
    return stacked(
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="out",
                     show_default=True, help=f"Artifacts root: steps under <out>/{steps}/, the "
                                             "report under <out>/report/."),
        click.option("--shard-size", type=click.IntRange(min=1), help="Queries per shard."),
        cache_dir_option,
        click.option("--dry-run", is_flag=True, help=dry_run),
        json_option)


@click.group()
def reproduce() -> None:
    """Reproduce a paper's experiments end to end, as one report version."""


@reproduce.command("utility-paper")
@click.option("--dataset", "datasets", type=DatasetName(), multiple=True, default=DATASETS,
              show_default=True,
              help="Dataset to run on; repeat for several (default: the paper's six).")
@click.option("--llm", "llms", multiple=True, default=LLMS, show_default=True,
              help="LLM to label and judge with; repeat for several (default: the paper's "
                   "four).")
@model_options(tensor_parallel=True)
@executor_options("the build's shards are labelled", "model")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries.")
@click.option("--k", type=click.IntRange(min=1), default=20, show_default=True,
              help="Retrieved passages per query.")
@click.option("--run", type=click.Path(dir_okay=False, path_type=Path),
              help="TREC or JSONL run file to use instead of retrieval (one --dataset).")
@click.option("--encoder", help="Retriever of the top k (default: bge-m3, offline minilm).")
@click.option("--corpus", metavar="NAME|FILE",
              help="Corpus instead of the paper's (msmarco-passage for msmarco-fqa, else the "
                   "dataset's own).")
@click.option("--index", metavar="KIND[:NAME=N,...]", help=INDEX_HELP)
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=MAX_NEW_TOKENS,
              show_default=True, help="Cap on every answer and judgment (the paper's code's).")
@_run_options("utility-paper", "Check everything and print the plan (steps, LLM calls, "
                               "tokens); load no model, download no corpus, write nothing.")
def utility_paper(datasets, llms, executor, ray_address, workers, out, shard_size, cache_dir,
                  dry_run, as_json, **options) -> None:
    """The utility paper (Zhang et al., LLM-specific utility): build the utility labels
    (rp, and hgp and mcp where the paper has them), run every judge method with and
    without the pseudo-answer, score them, compare the LLMs, and write one report version:
    Tables 2-6 and Figures 1-5 with the paper's numbers beside ours. Rerun to resume.
    """
    from labeler.llm.config import LLMConfig
    from labeler.workflows.reproduce.utility_dtypes import paper_settings
    from labeler.workflows.reproduce.utility_steps import ReproduceConfig

    settings = model_settings(options)
    settings |= paper_settings(settings["backend"], settings["dtype"])
    config = ReproduceConfig(datasets=tuple(datasets), **{
        k: (str(v) if k == "run" and v is not None else v) for k, v in options.items()})
    models = [LLMConfig(name, **settings) for name in llms]
    if dry_run:
        from labeler.workflows.reproduce.utility_plan import plan_rows

        _plan("utility-paper", plan_rows(config, models, out=out, cache_dir=cache_dir),
              as_json)
        return
    from labeler.executors import load_executor
    from labeler.workflows.reproduce.utility_paper import reproduce as run_reproduce

    runner = load_executor(executor, address=ray_address, workers=workers)
    done = run_reproduce(config, models, out=out, cache_dir=cache_dir, shard_size=shard_size,
                         executor=runner)
    table = Table(title=f"report: {len(done.ran)} steps run, {len(done.skipped)} done before",
                  title_justify="left")
    for column in ("item", "cells", "ours", "with the paper's"):
        table.add_column(column, justify="left" if column == "item" else "right")
    items = []
    for item in sorted({r["item"] for r in done.records}):
        mine = [r for r in done.records if r["item"] == item]
        items.append({"item": item, "cells": len(mine),
                      "ours": sum(r["ours"] is not None for r in mine),
                      "with_paper": sum(r["paper"] is not None for r in mine)})
        table.add_row(*(str(v) for v in items[-1].values()))
    emit({"ran": len(done.ran), "skipped": len(done.skipped), "items": items, "path": done.path},
         [table], [str(done.path)], as_json=as_json)


@reproduce.command("rubric-experiment")
@click.option("--dataset", "datasets", type=DatasetName(), multiple=True,
              default=("wands", "esci"),
              show_default=True, help="Dataset to run on; repeat for several (default: the "
                                      "experiment's two).")
@click.option("--llm", default="qwen3-8b", show_default=True,
              help="LLM that writes the questions and answers them (the experiment's, an API "
                   "model, is not open).")
@model_options()
@executor_options("the builds' shards are labelled", "model")
@click.option("--queries", type=click.IntRange(min=1), default=100, show_default=True,
              help="Queries sampled per dataset, as the experiment samples them.")
@click.option("--seed", type=int, default=42, show_default=True,
              help="The sample's seed (cheat_at_search's run_strategy's).")
@click.option("--rerank-k", type=click.IntRange(min=1), default=ARMS["bag"].k,
              show_default=True, help="BM25 top K the LLM reranks (the configs' k).")
@click.option("--weight", type=float, default=ARMS["bag"].decision_weight, show_default=True,
              help="w in fused = BM25 + w · rubric (the configs' decision_weight).")
@click.option("--max-questions", type=click.IntRange(min=1), default=10, show_default=True,
              help="Questions kept per query.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=ARMS["threshold"].threshold,
              show_default=True, help="The threshold variant's P (the experiment's bag at "
                                      "8306f4f: strategy.py's default).")
@_run_options("rubric-experiment", "Print the plan (steps, LLM calls); load no model and "
                                   "write nothing.")
def rubric_experiment(datasets, llm, executor, ray_address, workers, queries, seed, out,
                      shard_size, cache_dir, dry_run, as_json, **settings) -> None:
    """The bag-of-decisions experiment (Turnbull's blog; softwaredoug/search-experiments'
    configs): the BM25 baseline as it ran, the direct question alone and fused, the bag of
    questions summed and fused, and the threshold variant, each arm's BM25 boosts its config's, on the experiment's seeded query sample; NDCG@10 as the experiment
    computes it beside trec_eval's, paired t-tests between arms, tables and a figure in one
    report version. Rerun to resume.
    """
    from labeler.llm.config import LLMConfig
    from labeler.workflows.reproduce.rubric_steps import RubricExperimentConfig

    model = LLMConfig(llm, **model_settings(settings))
    config = RubricExperimentConfig(datasets=tuple(datasets), queries=queries, seed=seed,
                                    **settings)
    if dry_run:
        from labeler.workflows.reproduce.rubric_experiment import plan_rows

        _plan("rubric-experiment", plan_rows(config, model, out=out), as_json)
        return
    from labeler.workflows.reproduce.rubric_experiment import reproduce_rubric

    done, table = _reproduced(
        reproduce_rubric, config, model,
        ("dataset", "arm", "ndcg@10 (cheat_at_search)", "ndcg@10 (trec_eval)"), 2, out=out,
        cache_dir=cache_dir, shard_size=shard_size, executor=executor,
        ray_address=ray_address, workers=workers)
    means = {(r["dataset"], r["arm"], r["metric"]): r["mean"] for r in done.records
             if "arm" in r}
    for (dataset, arm, metric), mean in means.items():
        if metric != "ndcg@10":
            table.add_row(dataset, arm, _shown(mean), _shown(means[dataset, arm, "ndcg@10"]))
    emit({"ran": len(done.ran), "skipped": len(done.skipped), "rows": done.records,
          "path": done.path}, [table], [str(done.path)], as_json=as_json)


@reproduce.command("seer-paper")
@click.option("--dataset", "datasets", type=DatasetName(), multiple=True,
              default=("nq", "tq", "hotpotqa"), show_default=True,
              help="Dataset to run on; repeat for several. nq, tq, hotpotqa: pairs on SEER's "
                   "training split, Table 1 on the test split; any other (nq-sample): both.")
@click.option("--llm", default="llama2-7b-chat", show_default=True,
              help="The generator, and the base extractor unless --extractor (SEER's).")
@model_options()
@executor_options("the builds' shards are labelled", "model")
@click.option("--extractor", metavar="MODEL", help="Base extractor [default: the --llm].")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N test queries.")
@click.option("--train-limit", type=click.IntRange(min=1),
              help="Only the first N training queries.")
@click.option("--k", type=click.IntRange(min=1), default=5, show_default=True,
              help="Retrieved passages per query.")
@click.option("--samples", type=click.IntRange(min=1), default=10, show_default=True,
              help="Extractions sampled per training query (M).")
@click.option("--faithfulness", default="alignscore", show_default=True, metavar="SCORER",
              help="alignscore[:CHECKPOINT] (SEER's), llm (the generator as judge) or "
                   "nli:MODEL.")
@click.option("--tau", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="Temperature of the CoV weights' softmax.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=256, show_default=True,
              help="Cap on each extraction's and answer's new tokens.")
@click.option("--encoder", help="Retriever of the top k (default: bge-m3, offline minilm).")
@click.option("--index", metavar="KIND[:NAME=N,...]", help=INDEX_HELP)
@click.option("--corpus", metavar="CORPUS",
              help="Corpus retrieved from [default: SEER's, wiki-dpr (DPR's 21M passages), for "
                   "nq, tq, hotpotqa; a sample's own passages].")
@click.option("--run", type=click.Path(dir_okay=False, path_type=Path),
              help="TREC or JSONL run instead of retrieval (one dataset whose splits are one).")
@click.option("--steps", "max_steps", type=click.IntRange(min=1),
              help="Stop training after N optimizer steps instead of --epochs.")
@click.option("--epochs", type=click.FloatRange(min=0, min_open=True), default=2.0,
              show_default=True, help="Passes over the pairs.")
@click.option("--lr", "learning_rate", type=click.FloatRange(min=0, min_open=True),
              default=1e-5, show_default=True, help="Peak learning rate.")
@click.option("--train-batch-size", type=click.IntRange(min=1), default=16,
              show_default=True, help="Pairs per forward pass.")
@click.option("--gradient-accumulation", type=click.IntRange(min=1), default=2,
              show_default=True, help="Forward passes per optimizer step.")
@click.option("--beta", type=click.FloatRange(min=0, min_open=True), default=0.1,
              show_default=True, help="DPO's β (SEER states none: TRL's default).")
@click.option("--lora/--full", " /--no-lora", default=True, show_default=True,
              help="LoRA adapters (SEER's), or every weight.")
@_run_options("seer-paper", "Check everything and print the plan; load no model and write "
                            "nothing.")
def seer_paper(datasets, llm, executor, ray_address, workers, out, shard_size, cache_dir,
               dry_run, as_json, **settings) -> None:
    """SEER (Zhao et al.): build the preference pairs on the training split, train the
    extractor (LoRA, SEER's settings), extract the test split's evidence with the base and the
    trained extractor, answer with the generator, and write Table 1 (EM/F1, Tok, compression)
    beside the paper's numbers in one report version. Rerun to resume.
    """
    from labeler.llm.config import LLMConfig
    from labeler.train.config import TrainConfig
    from labeler.workflows.reproduce.seer_steps import SeerPaperConfig

    model = LLMConfig(llm, **model_settings(settings))
    train = TrainConfig(**{k: settings.pop(k) for k in (
        "max_steps", "epochs", "learning_rate", "gradient_accumulation", "beta", "lora")},
        batch_size=settings.pop("train_batch_size"))
    run = settings.pop("run")
    config = SeerPaperConfig(datasets=tuple(datasets), train=train,
                             run=None if run is None else str(run), **settings)
    if dry_run:
        from labeler.workflows.reproduce.seer_paper import plan_rows

        _plan("seer-paper", plan_rows(config, model, out=out), as_json)
        return
    from labeler.workflows.reproduce.seer_paper import reproduce_seer

    done, table = _reproduced(
        reproduce_seer, config, model,
        ("dataset", "method", "metric", "ours", "Tok", "paper (Llama2)"), 2, out=out,
        cache_dir=cache_dir, shard_size=shard_size, executor=executor,
        ray_address=ray_address, workers=workers)
    for r in (r for r in done.records if "method" in r):
        paper = r.get("paper_Llama2")
        table.add_row(r["dataset"], r["method"], r["metric"], _shown(r["score"]),
                      f"{r['tokens']:.1f}", "n/a" if paper is None else f"{paper[0]:.4f}")
    emit({"ran": len(done.ran), "skipped": len(done.skipped), "rows": done.records,
          "path": done.path}, [table], [str(done.path)], as_json=as_json)


def _reproduced(reproduce_with, config, model, columns: tuple[str, ...], left: int, *,
                executor: str, ray_address: str | None, workers: int | None, **keywords):
    """`reproduce_with(config, model, **keywords)` on the executor the options name; (what
    it did, its summary table with `columns`, the first `left` of them left-justified)."""
    from labeler.executors import load_executor

    done = reproduce_with(config, model, executor=load_executor(
        executor, address=ray_address, workers=workers), **keywords)
    table = Table(title=f"report: {len(done.ran)} steps run, {len(done.skipped)} done before",
                  title_justify="left")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i < left else "right")
    return done, table


def _plan(command: str, rows: list[tuple[str, str, str]], as_json: bool) -> None:
    """Render a dry run's (step, count, how known) rows."""
    table = Table(title=f"plan: reproduce {command} (dry run: no model loaded, nothing "
                        "written)", title_justify="left")
    for column in ("step", "count", "how known"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    emit({"plan": [dict(zip(("step", "count", "how_known"), row)) for row in rows]}, [table],
         as_json=as_json)


def _shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
