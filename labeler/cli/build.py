"""`labeler build`: parse, call `labeler.workflows.build.build`, render the task's summary rows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from labeler.cli.options import (
    Names,
    cache_dir_option,
    data_options,
    executor_options,
    model_options,
    model_settings,
    registry_names,
    task_options,
)
from labeler.cli.output import emit, json_option

if TYPE_CHECKING:
    from labeler.tasks.base import TaskConfig


def _help() -> str:
    """The command's help: what it does, then each task's `summary`, in registry order."""
    from labeler.tasks import TASKS

    what = "Label the candidate passages of a dataset for each LLM, and write one artifact each."
    return "\n\n".join([what, *(task.summary for task in TASKS.loaded().values())])


@click.command(help=_help())
@data_options(pools=True, qrels=True, task_defaults=True)
@click.option("--llm", "llms", multiple=True,
              help="Model alias, HF repo id, local folder or .gguf; repeat to label for several "
                   "(required, but for an --artifact that asks no LLM).")
@model_options(tensor_parallel=True)
@executor_options("the shards are labelled", "model")
@click.option("--artifact", type=Names(registry_names("labeler.tasks", "TASKS")),
              default="utility", show_default=True,
              help="What to label (each is described above).")
@click.option("--answer-extractor", metavar="MODEL",
              help="LLM that extracts entity answers from sentence answers first; required "
                   "for msmarco-fqa (the paper used qwen3-32b).")
@task_options()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="out",
              show_default=True, help="Artifacts root folder.")
@click.option("--version", help="Version to write (default: the next free integer).")
@click.option("--shard-size", type=click.IntRange(min=1),
              help="Queries per shard: each shard is written when done; a rerun resumes at "
                   "the unfinished ones [default: 256 on one worker; on several, at least 4 "
                   "equal shards a worker].")
@cache_dir_option
@click.option("--dry-run", is_flag=True,
              help="Check everything and print the plan (queries, passages, embeddings, LLM "
                   "calls); load no model, download no corpus, write nothing.")
@json_option
def build(llms, executor, ray_address, workers, artifact, out, version, shard_size,
          cache_dir, dry_run, as_json, **options) -> None:
    from labeler.executors import load_executor
    from labeler.llm.config import LLMConfig
    from labeler.tasks import load_task
    from labeler.workflows.build import build as build_labels

    task = load_task(artifact)
    settings = model_settings(options)
    config = task.Config.from_options(**options)
    models = [LLMConfig(name, **settings) for name in llms]
    if dry_run:
        from labeler.workflows.plan import plan

        rows = plan(artifact, config, models, out=out, version=version, cache_dir=cache_dir)
        emit({"plan": [dict(zip(("step", "count", "how_known"), row)) for row in rows]},
             [_plan_table(artifact, config, rows)], as_json=as_json)
        return
    runner = load_executor(executor, address=ray_address, workers=workers)
    built = build_labels(artifact, config, models, out=out, version=version,
                         shard_size=shard_size, cache_dir=cache_dir, executor=runner)
    table = Table(title=f"{artifact} labels: {config.dataset}, pool {config.pool}, k {config.k}")
    table.add_column("statistic")
    for b in built:
        table.add_column(b.llm, justify="right")
    for key, label, kind in task.rows:
        table.add_row(label, *(_show(b.stats.get(key), kind) for b in built))
    if any(b.unanswered for b in built):
        table.add_row("queries left out (a prompt refused as too long)",
                      *(f"{b.unanswered:,}" for b in built))
    emit({"artifact": artifact, "dataset": config.dataset, "pool": config.pool, "k": config.k,
          "versions": [{"llm": b.llm, "path": b.path, "stats": b.stats,
                        "unanswered": b.unanswered} for b in built]},
         [table], [f"{b.llm}: {b.path}" for b in built], as_json=as_json)


def _plan_table(artifact: str, config: TaskConfig, rows: list[tuple[str, str, str]]) -> Table:
    """The dry run's table: one row per step of the plan."""
    table = Table(title=f"plan: {artifact} labels of {config.dataset}, pool {config.pool}, "
                        f"k {config.k} (dry run: no model loaded, nothing written)")
    for column in ("step", "count", "how known"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for row in rows:
        table.add_row(*row)
    return table


def _show(value, kind: str) -> str:
    if value is None:
        return "n/a"
    if kind == "share":
        return f"{value:.1%}"
    if kind == "mean":
        return f"{value:.2f}"
    return str(value)
