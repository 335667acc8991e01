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

import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from timed_build import fresh_caches, timed_build


@click.command()
@click.option("--limit", default=8, show_default=True, help="Queries of the bundled sample.")
def main(limit: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        root = Path(tmp)
        caches = fresh_caches(root, "one", "many")
        options = ("--pool", "hgp", "--limit", str(limit))
        one, one_sha = timed_build(root / "one", caches["one"], *options, "--shard-size", "256")
        many, many_sha = timed_build(root / "many", caches["many"], *options, "--shard-size", "1")
        cached, cached_sha = timed_build(root / "cached", caches["one"], *options,
                                         "--shard-size", "256")
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
