"""The local executor: items one after another in this process, under one progress bar."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from labeler.executors.base import Executor, R, T
from labeler.progress import progress_bar


class LocalExecutor(Executor):
    """One worker, here, in order."""

    def map(self, worker: Callable[[T], R], items: Sequence[T], *, what: str, gpus: int = 0,
            total: int | None = None, size: Callable[[R], int] = lambda result: 1,
            cache_dir: str | None = None) -> Iterator[R]:
        with progress_bar(what, len(items) if total is None else total) as advance:
            for item in items:
                result = worker(item)
                yield result
                advance(size(result))
