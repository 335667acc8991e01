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

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table


def _build(out: Path, cache: Path, limit: int, k: int, shard_size: int,
           *executor: str) -> tuple[float, str]:
    """(seconds, sha256 of the data files in file-name order) of one `labeler build`."""
    command = [sys.executable, "-m", "labeler", "-q", "build", "--dataset", "nq-sample",
               "--llm", "smollm2-135m", "--limit", str(limit), "--k", str(k), "--encoder", "bm25",
               "--shard-size", str(shard_size), "--max-new-tokens", "32",
               "--cache-dir", str(cache), "--out", str(out), *executor]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.perf_counter() - start
    digest = hashlib.sha256()
    for file in sorted(out.glob("utility/nq-sample/smollm2-135m/v*/data-*.jsonl")):
        digest.update(file.read_bytes())
    return seconds, digest.hexdigest()


@click.command()
@click.option("--limit", default=8, show_default=True, help="Queries of the bundled sample.")
@click.option("--k", default=3, show_default=True, help="Retrieved passages per query.")
@click.option("--shard-size", default=2, show_default=True, help="Queries per shard.")
@click.option("--workers", default=2, show_default=True, help="Ray workers (and Ray's CPUs).")
def main(limit: int, k: int, shard_size: int, workers: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        root = Path(tmp)
        models = root / "models"  # convert the bundled GGUF once, outside the timings
        _build(root / "warm", root / "warm-cache", 1, 1, 1)
        (root / "warm-cache" / "models").rename(models)
        caches = {name: root / f"cache-{name}" for name in ("local", "ray")}
        for cache in caches.values():
            cache.mkdir()
            (cache / "models").symlink_to(models)
        local, local_sha = _build(root / "local", caches["local"], limit, k, shard_size)
        ray, ray_sha = _build(root / "ray", caches["ray"], limit, k, shard_size,
                              "--executor", "ray", "--workers", str(workers))
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
