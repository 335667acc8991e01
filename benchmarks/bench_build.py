"""Benchmark `labeler build` as a user waits for it: whole processes, start-up included (not a
test).

    python benchmarks/bench_build.py [--limit 8]

Runs, in one session on this machine, the same utility build of the bundled NQ sample (human
gold pools, the bundled SmolLM2, fresh call caches each time):
- one shard (the default shard size) against one query per shard: what resumability costs in
  batching when shards are made small;
- a rerun served by the call cache against the first run: what a resumed or repeated build
  costs once its calls are cached.
Both data outputs are checked to be byte-identical.
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


def _build(out: Path, cache: Path, limit: int, shard_size: int) -> tuple[float, str]:
    """(seconds, sha256 of the data files in file-name order) of one `labeler build`."""
    command = [sys.executable, "-m", "labeler", "-q", "build", "--dataset", "nq-sample",
               "--llm", "smollm2-135m", "--pool", "hgp", "--limit", str(limit),
               "--shard-size", str(shard_size), "--cache-dir", str(cache), "--out", str(out)]
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
def main(limit: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        root = Path(tmp)
        models = root / "models"  # convert the bundled GGUF once, outside the timings
        _build(root / "warm", root / "warm-cache", 1, 1)
        (root / "warm-cache" / "models").rename(models)
        caches = {name: root / f"cache-{name}" for name in ("one", "many")}
        for cache in caches.values():
            cache.mkdir()
            (cache / "models").symlink_to(models)
        one, one_sha = _build(root / "one", caches["one"], limit, 256)
        many, many_sha = _build(root / "many", caches["many"], limit, 1)
        cached, cached_sha = _build(root / "cached", caches["one"], limit, 256)
    if not one_sha == many_sha == cached_sha:
        raise SystemExit("the data differ between shard sizes: a bug, not a benchmark result")
    table = Table(title=f"labeler build, {limit} queries, whole processes (same data bytes)")
    for column in ("run", "seconds", "ratio"):
        table.add_column(column, justify="left" if column == "run" else "right")
    table.add_row("one shard of 256 (default)", f"{one:.1f}", "1.00")
    table.add_row("one query per shard", f"{many:.1f}", f"{many / one:.2f}")
    table.add_row("rerun, calls cached", f"{cached:.1f}", f"{cached / one:.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
