"""The shard plan: how many queries each shard of a build holds.

A shard is the unit of resumption and of distribution. One worker takes shards of
`DEFAULT_SHARD_SIZE`. Several workers pull shards as each gets free, so the plan shrinks them
(guided self-scheduling): each holds 1/`SHARES_A_WORKER` of a worker's share of the queries
still left, so the first are large (up to `DEFAULT_SHARD_SIZE`) and the last, which decide
when the workers finish, are small (down to `MIN_SHARD_SIZE`, or fewer where the queries do
not give each worker that many). 12 shards of 256 on 8 workers
left a third of their time idle; this plan about 1% (benchmarks/bench_shards.py). Imported by
the CLI for its defaults, so it imports nothing heavy.
"""

from __future__ import annotations

#: queries per shard for one worker, and the most for several
DEFAULT_SHARD_SIZE = 256
#: the fewest queries a shard holds for several workers (unless fewer are left)
MIN_SHARD_SIZE = 8
#: a shard for several workers holds 1/SHARES_A_WORKER of a worker's share of what is left
SHARES_A_WORKER = 2


def plan_shards(queries: int, workers: int = 1, size: int | None = None) -> list[int]:
    """The sizes of the shards of `queries` queries, in order: `size` each (the last may be
    shorter) when given or for one worker; else, for `workers` workers, shrinking shards.

    >>> plan_shards(10, size=4)
    [4, 4, 2]
    >>> plan_shards(100, workers=4)
    [13, 11, 10, 9, 8, 8, 8, 8, 8, 8, 8, 1]
    """
    if size is not None or workers <= 1:
        size = size or DEFAULT_SHARD_SIZE
        return [min(size, queries - start) for start in range(0, queries, size)]
    sizes, left = [], queries
    smallest = min(MIN_SHARD_SIZE, -(-queries // workers))  # a few queries: one each
    while left:
        share = -(-left // (workers * SHARES_A_WORKER))
        sizes.append(min(DEFAULT_SHARD_SIZE, max(smallest, share), left))
        left -= sizes[-1]
    return sizes
