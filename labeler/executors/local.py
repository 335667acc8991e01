"""The local executor: items one after another in this process, under one progress bar; with
`ahead`, the next ones started while one runs, each in a thread of its own, taking turns on
the engine (`labeler.turns`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from itertools import islice

from labeler.executors.base import Executor, R, T
from labeler.progress import progress_bar
from labeler.turns import Turns


class LocalExecutor(Executor):
    """One worker, here, in order."""

    def map(self, worker: Callable[[T], R], items: Sequence[T], *, what: str, gpus: int = 0,
            total: int | None = None, size: Callable[[R], int] = lambda result: 1,
            cache_dir: str | None = None, ahead: int = 0) -> Iterator[R]:
        results = in_turns(worker, items, ahead) if ahead else map(worker, items)
        with progress_bar(what, len(items) if total is None else total) as advance:
            for result in results:
                yield result
                advance(size(result))


def in_turns(worker: Callable[[T], R], items: Sequence[T], ahead: int) -> Iterator[R]:
    """`worker(item)` for each item, each in a thread of its own, `1 + ahead` at a time,
    started in order and taking turns on the engine in that order; each result as it ends.
    The next item starts before a result is given to the caller, so it prepares while the
    caller writes. On leaving early (an error, Ctrl-C), the items still running are cancelled
    (they stop at their turn, or at their next answer) and waited for."""
    turns, ended = Turns(), queue.SimpleQueue()
    threads: list[threading.Thread] = []
    waiting = iter(items)

    def start(item: T) -> None:
        ticket = turns.take()

        def run() -> None:
            try:
                ended.put((True, turns.run(ticket, worker, item)))
            except BaseException as error:  # noqa: BLE001 (raised again in the caller)
                ended.put((False, error))

        threads.append(threading.Thread(target=run, name=f"labeler-item-{ticket}",
                                        daemon=True))
        threads[-1].start()

    try:
        for item in islice(waiting, 1 + ahead):
            start(item)
        for _ in range(len(items)):
            finished, result = ended.get()
            if not finished:
                raise result
            for item in islice(waiting, 1):
                start(item)
            yield result
    finally:
        turns.cancel()
        for thread in threads:
            thread.join()
