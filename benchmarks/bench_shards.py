"""Benchmark the idle share that shard imbalance leaves a build's workers: NQ's 2,837 queries
on 8 workers, under the shard plan labeler makes (`plan_shards`), fixed 256-query shards (the
old default) and `--shard-size 32`.

The workers pull shards in order as each gets free, as the Ray executor's actor pool hands
them out; a query costs its calls (about 23.5 for utility at k = 20), drawn per query from a
log-normal spread (sigma --spread) around that mean, for each of --seeds seeds. The idle
share is 1 - (the work) / (workers x the time the last worker ends): what the GPUs lose to
imbalance alone; the table gives its mean and worst over the seeds.

Usage: python benchmarks/bench_shards.py [--queries 2837] [--workers 8] [--spread 0.5]
       [--seeds 30]
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
from itertools import accumulate, pairwise

from rich.console import Console
from rich.table import Table

from labeler.tasks.shard_plan import plan_shards

CALLS_A_QUERY = 23.5


def idle_share(costs: list[float], sizes: list[int], workers: int) -> float:
    """The share of `workers`' time idle when they pull shards of `sizes` queries (of `costs`
    each, in order) as each gets free."""
    starts = [0, *accumulate(sizes)]
    free = [0.0] * workers  # when each worker is next free
    for a, b in pairwise(starts):
        heapq.heapreplace(free, free[0] + sum(costs[a:b]))
    return 1 - sum(costs) / (workers * max(free))


def main(queries: int, workers: int, spread: float, seeds: int) -> None:
    mu = math.log(CALLS_A_QUERY) - spread ** 2 / 2  # so that the mean is CALLS_A_QUERY
    drawn = [[rng.lognormvariate(mu, spread) for _ in range(queries)]
             for rng in map(random.Random, range(seeds))]
    table = Table(title=f"idle share from shard imbalance: {queries:,} queries, calls a query "
                        f"log-normal (mean {CALLS_A_QUERY}, sigma {spread}), {seeds} seeds")
    for column in ("workers", "plan", "shards", "queries a shard", "idle: mean", "worst"):
        table.add_column(column, justify="left" if column == "plan" else "right")
    for count in sorted({1, 2, 4, workers, 2 * workers}):
        plans = {"labeler's plan": plan_shards(queries, count),
                 "--shard-size 256 (old default)": plan_shards(queries, size=256),
                 "--shard-size 32": plan_shards(queries, size=32)}
        for name, sizes in plans.items():
            spread_of = f"{min(sizes)}-{max(sizes)}" if min(sizes) != max(sizes) \
                else str(sizes[0])
            idle = [idle_share(costs, sizes, count) for costs in drawn]
            table.add_row(str(count), name, str(len(sizes)), spread_of,
                          f"{sum(idle) / seeds:.1%}", f"{max(idle):.1%}")
        table.add_section()
    Console().print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2837)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--spread", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, default=30)
    args = parser.parse_args()
    main(args.queries, args.workers, args.spread, args.seeds)
