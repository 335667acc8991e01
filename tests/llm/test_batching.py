"""The one batching policy: longest first, groups never split, caller order restored."""

from __future__ import annotations

import random

import pytest

from labeler.errors import InputError
from labeler.llm.batching import Collator


def test_batches_run_longest_first_and_results_come_back_in_caller_order():
    items = ["bb", "a", "dddd", "ccc", "ee"]
    collator = Collator(items, sort_key=len, batch_size=2)
    assert list(collator) == [[2, 3], [0, 4], [1]]  # "bb" and "ee" tie: caller order
    assert collator.order == [2, 3, 0, 4, 1]
    assert len(collator) == 5
    computed = [items[k].upper() for batch in collator for k in batch]  # as a backend would
    assert collator.restore(computed) == ["BB", "A", "DDDD", "CCC", "EE"]


def test_a_group_is_never_split_and_a_large_group_is_a_batch_of_its_own():
    # (prompt, sample) rows of three prompts with 3 samples each, prompt lengths 5, 9, 2
    lengths = {"p0": 5, "p1": 9, "p2": 2}
    rows = [(p, j) for p in lengths for j in range(3)]
    collator = Collator(rows, sort_key=lambda r: lengths[r[0]], group_key=lambda r: r[0],
                        batch_size=4)
    batches = [[rows[k] for k in batch] for batch in collator]
    assert batches == [[("p1", 0), ("p1", 1), ("p1", 2)],  # 3 + 3 > 4: p0 waits
                       [("p0", 0), ("p0", 1), ("p0", 2)],
                       [("p2", 0), ("p2", 1), ("p2", 2)]]
    big = Collator(rows, sort_key=lambda r: lengths[r[0]], group_key=lambda r: r[0],
                   batch_size=2)
    assert [len(batch) for batch in big] == [3, 3, 3]  # 3 samples of a prompt in one batch


def test_whole_groups_fill_a_batch_up_to_its_size():
    # groups a (2 items), b (1), c (2), d (1); all the same length: caller order
    keys = ["a", "a", "b", "c", "c", "d"]
    collator = Collator(keys, sort_key=lambda _: 0, group_key=lambda key: key, batch_size=3)
    assert [[keys[k] for k in batch] for batch in collator] == [
        ["a", "a", "b"], ["c", "c", "d"]]


def test_random_items_every_index_once_groups_together_sizes_kept():
    rng = random.Random(7)
    items = [(rng.randrange(12), rng.randrange(100)) for _ in range(300)]  # (group, length)
    collator = Collator(items, sort_key=lambda x: x[1], group_key=lambda x: x[0], batch_size=40)
    assert sorted(collator.order) == list(range(300))
    seen = {}
    for b, batch in enumerate(collator):
        assert len(batch) <= 40 or len({items[k][0] for k in batch}) == 1
        for k in batch:
            assert seen.setdefault(items[k][0], b) == b  # each group in exactly one batch
    group_longest = [max(items[k][1] for k in batch) for batch in collator]
    assert group_longest == sorted(group_longest, reverse=True)
    assert collator.restore(collator.order) == list(range(300))


def test_restore_refuses_a_result_count_that_does_not_match():
    collator = Collator(["a", "b"], sort_key=len, batch_size=8)
    with pytest.raises(ValueError):
        collator.restore(["only one"])
    assert list(Collator([], sort_key=len, batch_size=8)) == []
    with pytest.raises(InputError, match=r"^field 'batch_size': batch size must be >= 1$"):
        Collator(["a"], sort_key=len, batch_size=0)
