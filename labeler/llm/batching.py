"""One batching policy for both backends and the call cache, after lm-evaluation-harness's Collator.

Items are sorted longest first and cut into batches of `batch_size`; items that share a group
key (the n samples of one prompt, the choices of one prompt, the continuations of one context)
always land in the same batch, so a backend can compute their common prefix once; results
computed batch by batch are put back into the caller's order. `chat_prefix` is that key for
chats that continue one conversation (a document, then one of its questions).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from itertools import pairwise
from typing import Any, Generic, TypeVar

from labeler.errors import InputError
from labeler.llm.base import Chat

T = TypeVar("T")
R = TypeVar("R")


class Collator(Generic[T]):
    """Batches of indices into `items`: longest first, `batch_size` at a time, no group split.

    Groups (items with equal `group_key`; each item its own group without one) are ordered by
    their largest `sort_key`, descending, ties in caller order; within a group items keep caller
    order. Whole groups fill a batch while they fit; a group larger than `batch_size` is one
    batch of its own. `restore` maps results listed batch after batch back to caller order.
    A backend that refills a running batch takes the `groups` one after another instead.

    >>> collator = Collator(["bb", "a", "ccc", "dd"], sort_key=len, batch_size=2)
    >>> list(collator)
    [[2, 0], [3, 1]]
    >>> collator.restore(["C", "B", "D", "A"])
    ['B', 'A', 'C', 'D']
    """

    def __init__(self, items: Sequence[T], *, sort_key: Callable[[T], Any], batch_size: int,
                 group_key: Callable[[T], Hashable] | None = None) -> None:
        if batch_size < 1:
            raise InputError("batch size must be >= 1", field_name="batch_size")
        #: the groups, longest first (sorted() is stable: ties keep caller order)
        if group_key is None:  # each item its own group
            self.groups = [[k] for k in sorted(range(len(items)), reverse=True,
                                               key=lambda k: sort_key(items[k]))]
        else:
            groups: dict[Hashable, list[int]] = {}
            for index, item in enumerate(items):
                groups.setdefault(group_key(item), []).append(index)
            self.groups = sorted(groups.values(), reverse=True,
                                 key=lambda g: max(sort_key(items[k]) for k in g))
        self.batches: list[list[int]] = []
        for group in self.groups:
            if self.batches and len(self.batches[-1]) + len(group) <= batch_size:
                self.batches[-1].extend(group)
            else:
                self.batches.append(list(group))
        #: every index, in the order the batches hold them
        self.order = [k for batch in self.batches for k in batch]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches)

    def __len__(self) -> int:
        """The number of items (not batches), for progress bars."""
        return len(self.order)

    def restore(self, results: Iterable[R]) -> list[R]:
        """Results given batch after batch (one per index of `order`) -> in caller order."""
        out: list[Any] = [None] * len(self.order)
        for index, result in zip(self.order, results, strict=True):
            out[index] = result
        return out


def chat_prefix(prompt: Chat) -> Chat:
    """The group key of a chat whose turns but the last are shared with others: those turns,
    when they hold more than a system prompt (a document before its question); else the whole
    chat, a group of its own (and of its exact repeats).

    >>> from labeler.llm.base import Message
    >>> doc, ask = Message("user", "Doc"), Message("user", "Relevant?")
    >>> chat_prefix((doc, ask)) == (doc,), chat_prefix((ask,)) == (ask,)
    (True, True)
    """
    shared = prompt[:-1]
    return shared if any(m.role != "system" for m in shared) else prompt


def common_prefix(rows: list[list[int]]) -> int:
    """The length of the rows' longest common prefix, short of the shortest row's last token.

    >>> common_prefix([[1, 2, 3, 4], [1, 2, 5]]), common_prefix([[1, 2, 3]])
    (2, 2)
    """
    n = min(map(len, rows)) - 1
    first = rows[0]
    for row in rows[1:]:
        n = next((k for k in range(n) if row[k] != first[k]), n)
    return max(n, 0)


def shared_prefixes(prompts: Sequence[Sequence[int]], *, overhead: int) -> list[int]:
    """For each prompt, how many of its first tokens to compute once for every prompt that
    begins with them (0: none), choosing the prefixes that save the most tokens: a prefix of
    length m that s prompts share saves (s - 1) x m tokens but costs one forward pass of its
    own, worth `overhead` tokens. A nested prefix (its prompts share more) is taken instead of
    its parent where it saves more. A prompt's last token is never in its prefix (its logits
    are the answer's first), and an exact repeat of a prompt counts once.

    >>> shared_prefixes([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 6], [7, 8]], overhead=1)
    [2, 2, 2, 0]
    >>> shared_prefixes([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 9], [1, 2, 9]],
    ...                 overhead=1)
    [7, 7, 0]
    >>> shared_prefixes([[1, 2, 3, 4], [1, 2, 3, 5]], overhead=4)
    [0, 0]
    """
    distinct = sorted(set(map(tuple, prompts)))
    # each neighbour pair's common prefix, short of either one's last token
    lcp = [common_prefix([a, b]) for a, b in pairwise(distinct)]
    cut = [0] * len(distinct)

    def best(lo: int, hi: int, parent: int, depth: int) -> tuple[int, list[tuple[int, int]]]:
        """distinct[lo:hi]'s greatest saving over `parent` (their prefix already computed) and
        the (start, cut) of each member it sets: its own prefix, its sub-ranges', or neither."""
        if hi - lo < 2 or depth > MAX_NESTED_PREFIXES:
            return 0, []
        shared = min(lcp[lo:hi - 1])
        subs, start = [], lo
        for k in range(lo, hi - 1):
            if lcp[k] == shared:
                subs.append((start, k + 1))
                start = k + 1
        subs.append((start, hi))
        options = [_children(best, subs, parent, depth)]
        if shared > parent:
            gain, sets = _children(best, subs, shared, depth)
            options.append(((hi - lo) * (shared - parent) - shared - overhead + gain,
                            [(k, shared) for k in range(lo, hi)] + sets))
        return max(options, key=lambda option: option[0])

    _, sets = best(0, len(distinct), 0, 0)
    for k, length in sets:  # a nested prefix is set after its parent's
        cut[k] = length
    where = dict(zip(distinct, cut))
    return [where[tuple(p)] for p in prompts]


#: how deeply prefixes may nest in `shared_prefixes` (a bound on its recursion)
MAX_NESTED_PREFIXES = 32


def _children(best, subs: list[tuple[int, int]], parent: int, depth: int):
    """The summed savings and settings of `subs` ranges under a prefix of length `parent`."""
    total, sets = 0, []
    for lo, hi in subs:
        gain, more = best(lo, hi, parent, depth + 1)
        total += gain
        sets += more
    return total, sets
