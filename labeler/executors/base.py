"""The executor interface: map a worker over items, here or in other processes, and yield
each result as it finishes.

A worker is a picklable callable that loads what it needs on its first call and keeps it,
so each process an executor runs loads its model once (datatrove's ranks run any step).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(ABC):
    """Runs workers over items; knows nothing of what they compute."""

    #: whether workers run in this process, where they share what it has loaded
    in_process = True

    @abstractmethod
    def map(self, worker: Callable[[T], R], items: Sequence[T], *, what: str, gpus: int = 0,
            total: int | None = None, size: Callable[[R], int] = lambda result: 1,
            cache_dir: str | None = None, ahead: int = 0) -> Iterator[R]:
        """`worker(item)` for every item exactly once, each yielded as it finishes, in any
        order, under a progress bar `what` of `total` (default: one per item) that each
        result advances by `size(result)`. An item is read only when a worker takes it. Each
        worker holds `gpus` GPUs and, elsewhere than here, sees the call cache `cache_dir`
        (None: none). With `ahead`, each worker starts that many more items while one runs,
        each in a thread of its own taking turns on the engine (`labeler.turns`): the worker
        must be safe to call from several threads."""

    def worker_count(self, gpus: int = 0) -> int:
        """How many workers `map` runs at once, each holding `gpus` GPUs. Here: one."""
        return 1

    def call(self, fn: Callable[[], R], *, gpus: int = 0, cache_dir: str | None = None) -> R:
        """`fn()` once, where this executor's workers would run it (so that what cannot load
        there fails before any work). Here: in this process."""
        return fn()
