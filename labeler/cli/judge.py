"""`labeler judge`: parse, call `labeler.workflows.judge.judge`, render its statistics."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from labeler.cli.options import (
    cache_dir_option,
    config_options,
    data_options,
    model_options,
    model_settings,
)
from labeler.cli.output import emit, json_option
from labeler.judges.methods import METHODS, Judge, JudgeConfig
from labeler.tasks.shard_plan import DEFAULT_SHARD_SIZE


@click.command()
@data_options(pools=True)
@click.option("--llm", help="The LLM that judges (alias, HF repo id, local folder or .gguf); "
                            "not needed for --method retrieval.")
@model_options()
@click.option("--method", type=click.Choice(list(METHODS)), required=True,
              help="pvs: pointwise verbalized selection; lvs: listwise verbalized selection; "
                   "lvr: listwise verbalized ranking; likelihood: P(pseudo-answer | q, d); "
                   "retrieval: the pool's order; attention: AttR, the attention the LLM's "
                   "answer pays to each passage (hf backend).")
@config_options({None: JudgeConfig}, skip=("method",))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The submission to write (.jsonl); FILE.manifest.json goes beside it.")
@click.option("--shard-size", type=click.IntRange(min=1), default=DEFAULT_SHARD_SIZE,
              show_default=True, help="Queries per batch of judgments.")
@cache_dir_option
@json_option
def judge(llm, out, shard_size, cache_dir, as_json, **options) -> None:
    """Judge the candidate passages of a dataset with one method, and write a submission.

    The pools are those `labeler build` labels for the same options; score the submission
    against the LLM's utility artifact with `labeler score OUT --against ARTIFACT`.
    """
    from labeler.llm.config import LLMConfig
    from labeler.workflows.judge import judge as run_judge

    settings = model_settings(options)
    config = JudgeConfig.from_options(**options)
    model = None if llm is None else LLMConfig(llm, **settings)
    judged = run_judge(config, model, out=out, shard_size=shard_size, cache_dir=cache_dir)
    table = Table(title=f"{config.method}{' with answer' if config.with_answer else ''}: "
                        f"{config.dataset}, pool {config.pool} ({judged.kind})",
                  title_justify="left")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for key, label, kind in Judge.rows:
        value = judged.stats.get(key)
        if value is not None:
            table.add_row(label, f"{value:.2f}" if kind == "mean" else str(value))
    emit({"method": config.method, "with_answer": config.with_answer,
          "dataset": config.dataset, "pool": config.pool, "kind": judged.kind,
          "stats": judged.stats, "path": judged.path, "manifest": judged.manifest_path},
         [table], [str(judged.path), str(judged.manifest_path)], as_json=as_json)
