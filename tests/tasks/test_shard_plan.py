"""The shard plan: one worker keeps 256-query shards, several get shrinking shards, and
--shard-size overrides both."""

from __future__ import annotations

import pytest

from labeler.tasks.shard_plan import DEFAULT_SHARD_SIZE, MIN_SHARD_SIZE, plan_shards


def test_one_worker_and_an_asked_size_cut_fixed_shards():
    assert plan_shards(600) == [DEFAULT_SHARD_SIZE, DEFAULT_SHARD_SIZE, 88]
    assert plan_shards(600, workers=8, size=250) == [250, 250, 100]
    assert plan_shards(0) == plan_shards(0, workers=8) == []


@pytest.mark.parametrize(("queries", "workers"), [(2837, 8), (40_000, 8), (100, 3), (5, 8)])
def test_several_workers_get_shrinking_shards(queries, workers):
    sizes = plan_shards(queries, workers)
    assert sum(sizes) == queries
    assert sizes == sorted(sizes, reverse=True) and max(sizes) <= DEFAULT_SHARD_SIZE
    assert len(sizes) >= min(queries, 2 * workers)  # every worker takes several
    assert all(size >= min(MIN_SHARD_SIZE, queries // workers) for size in sizes[:-1])
