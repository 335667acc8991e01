"""Does the engine wait for labeler? A real utility build against a simulated engine (not a
test).

    python benchmarks/bench_pipeline.py [--queries 200] [--k 20] [--shard-size 64]

The build of bench_overhead's data (nq-sample's real questions and passages, run-file pools,
the real call cache and writer, SmolLM2's real chat template and tokenizer) asks
`instant_backend.SimulatedEngine`, which spends a fixed time on each request beside the
process, sized to 1,500 calls a second over 8 workers (8 / 1,500 s a request for each worker:
a Ray worker is one such process, one engine each). The engine's busy fraction is its busy
time over the time from its first request to the build's end (records, shard writes and the
manifest included); target (issue 33): >= 0.95.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import click
import instant_backend
from bench_overhead import synthetic
from rich.console import Console
from rich.table import Table

from labeler.executors import load_executor
from labeler.llm import load_backend
from labeler.llm.config import LLMConfig
from labeler.tasks import load_task
from labeler.workflows.build import build


@click.command()
@click.option("--queries", default=200, show_default=True, help="Queries of the build.")
@click.option("--k", default=20, show_default=True, help="Passages a query in the run.")
@click.option("--shard-size", default=64, show_default=True, help="Queries a shard.")
@click.option("--rate", default=1500.0, show_default=True, help="Calls a second, all workers.")
@click.option("--workers", default=8, show_default=True, help="Workers sharing that rate.")
def main(queries: int, k: int, shard_size: int, rate: float, workers: int) -> None:
    instant_backend.register()
    instant_backend.REQUEST_SECONDS = workers / rate
    engine = load_backend("smollm2-135m", backend="simulated", use_cache=False)
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        root = Path(tmp)
        data = synthetic(root / "data", queries, k)
        config = load_task("utility").Config(k=k, **data)
        build("utility", config, [LLMConfig("smollm2-135m", backend="simulated")],
              out=root / "out", cache_dir=root / "cache", shard_size=shard_size,
              executor=load_executor("local"))
        end = time.perf_counter()
    span = end - engine.first
    table = Table(title=f"utility build against a simulated engine: {queries} queries, k {k}, "
                        f"shards of {shard_size}, {instant_backend.REQUEST_SECONDS * 1000:.2f} "
                        f"ms a request ({rate:,.0f} calls/s over {workers} workers)")
    for column in ("measure", "value", "target"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    table.add_row("requests", f"{engine.answered:,}", "")
    table.add_row("engine busy, s", f"{engine.busy:.1f}", "")
    table.add_row("first request to the build's end, s", f"{span:.1f}", "")
    table.add_row("idle after the last answer, s", f"{end - engine.last:.2f}", "")
    busy = engine.busy / span
    table.add_row("[bold]engine busy fraction", f"[bold]{busy:.3f}",
                  ">= 0.95 " + ("[green]met" if busy >= 0.95 else "[red]not met"))
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
