"""The engine's work beside labeler's: an iterator of answers run in a thread of its own, so
that what the caller does with each answer (commit it, check it, write records) overlaps the
next ones' generation instead of pausing it.

The engine thread never waits for its consumer: answers pile up in an unbounded queue (they
are small) and the consumer takes everything that has arrived at once. A consumer that stops
(an error, Ctrl-C) tells the thread to stop at its next answer; an error in the thread is
raised in the consumer.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_END = object()


def overlapped(items: Iterable[T]) -> Iterator[list[T]]:
    """The items of `items`, computed in another thread, in the order they come: each time a
    list of all that arrived since the last (at least one), until all are given."""
    arrived: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                arrived.put(item)
                if stop.is_set():
                    break
            arrived.put(_END)
        except BaseException as error:  # noqa: BLE001 (raised again in the consumer)
            arrived.put(_Failed(error))

    thread = threading.Thread(target=produce, name="labeler-engine", daemon=True)
    thread.start()
    try:
        while True:
            taken = [arrived.get()]
            while not arrived.empty():
                taken.append(arrived.get())
            done = taken[-1] is _END or isinstance(taken[-1], _Failed)
            last = taken.pop() if done else None
            if taken:
                yield taken
            if isinstance(last, _Failed):
                raise last.error
            if done:
                return
    finally:  # no engine work outlives its call: the thread stops at its next answer
        stop.set()
        thread.join()


class _Failed:
    """An error of the producer, carried to the consumer."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
