"""The one batching policy: longest first, groups never split, caller order restored; the
prefixes a call's prompts share, prefilled once."""

from __future__ import annotations

import random

import pytest

from labeler.errors import InputError
from labeler.llm.batching import Collator, shared_prefixes


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


def test_shared_prefixes_take_the_one_that_saves_most_and_never_a_last_token():
    system = [1, 2, 3, 4, 5, 6, 7, 8]  # a chat template's system turn, 8 tokens
    closed = [system + [20, 21, 22, 23, 24, 25, 26, 27, q] for q in (30, 31, 32)]
    passage = [system + [40, p, 41] for p in (50, 51, 52)]
    alone = [9, 9, 9]
    prompts = [*closed, *passage, alone, closed[0]]  # an exact repeat counts once
    # each prefix is prefilled alone: the closed-book prompts' 16 tokens save 3 x 16 - 16 - 2
    # = 30, the passage ones' 9 save 3 x 9 - 9 - 2 = 16; the system turn for all six would
    # save 6 x 8 - 8 - 2 = 38, and then the closed-book ones' own 3 x 8 - 16 - 2 = 6 more
    assert shared_prefixes(prompts, overhead=2) == [16, 16, 16, 9, 9, 9, 0, 16]
    # an overhead above any saving: nothing shared
    assert shared_prefixes(prompts, overhead=100) == [0] * 8
    # a prompt that is another's prefix keeps its last token out of the shared part: the
    # three share [1, 2] (3 x 2 - 2 = 4, over the longer two's [1, 2, 3]: 2 x 3 - 3 = 3)
    assert shared_prefixes([[1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 5]], overhead=0) == [2, 2, 2]
    assert shared_prefixes([[1, 2, 3, 4], [1, 2, 3, 5]], overhead=0) == [3, 3]
