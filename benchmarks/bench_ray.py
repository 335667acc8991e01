"""Benchmark the Ray executor against the local one: whole `labeler build` processes, Ray's
start-up and every model load included (not a test).

    python benchmarks/bench_ray.py [--limit 8] [--k 3] [--shard-size 2] [--workers 2]

Runs, in one session on this machine, the same utility build of the bundled NQ sample
(BM25 top-k pools over its corpus, so no dense encoding of the corpus in the timings;
the bundled SmolLM2; fresh call caches each time) with `--executor local` and with `--executor
ray --workers N` (Ray started here with N CPUs), and prints the ratio of their wall times and
whether their data files are byte-identical. The issue's target: at most 1.3x on 2 workers
on the same 2 cores.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from timed_build import fresh_caches, timed_build


@click.command()
@click.option("--limit", default=8, show_default=True, help="Queries of the bundled sample.")
@click.option("--k", default=3, show_default=True, help="Retrieved passages per query.")
@click.option("--shard-size", default=2, show_default=True, help="Queries per shard.")
@click.option("--workers", default=2, show_default=True, help="Ray workers (and Ray's CPUs).")
def main(limit: int, k: int, shard_size: int, workers: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        root = Path(tmp)
        caches = fresh_caches(root, "local", "ray")
        options = ("--limit", str(limit), "--k", str(k), "--encoder", "bm25", "--shard-size",
                   str(shard_size), "--max-new-tokens", "32")
        local, local_sha = timed_build(root / "local", caches["local"], *options)
        ray, ray_sha = timed_build(root / "ray", caches["ray"], *options, "--executor", "ray",
                                   "--workers", str(workers))
    table = Table(title=f"labeler build, {limit} queries, k {k}, shard size {shard_size}, "
                        f"{os.cpu_count()} cores, whole processes")
    for column in ("executor", "seconds", "ratio"):
        table.add_column(column, justify="left" if column == "executor" else "right")
    table.add_row("local", f"{local:.1f}", "1.00")
    table.add_row(f"ray, {workers} workers (started here)", f"{ray:.1f}", f"{ray / local:.2f}")
    Console().print(table)
    Console().print(f"data files byte-identical: {'yes' if local_sha == ray_sha else 'NO'}")
    if local_sha != ray_sha:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
