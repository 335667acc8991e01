"""Turns on the engine for items that run at once: an executor that starts a worker's next
item before its last one ends (`Executor.map`'s `ahead`) runs each in a thread of its own with
a ticket, in the order it started them; the work that needs the engine waits for its item's
turn (`wait_turn`), which comes once every item started before it has ended.

So the next item prepares its requests (rendering, tokenizing, cache look-ups) while the last
one's are on the engine, and the engine still runs the items' requests one item after
another, as it would run them without threads: the same calls in the same order. Cancelling
the turns (the executor stopped early: an error, Ctrl-C) makes every item that waits for its
turn, or checks it (`check_turn`), raise `Cancelled`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import TypeVar

R = TypeVar("R")


class Cancelled(Exception):
    """The item's turns were cancelled: its executor stopped before the item's turn."""


class Turns:
    """The tickets of the items running at once, in the order they were taken."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running: list[int] = []  # tickets of the items not yet ended, oldest first
        self._taken = 0
        self.cancelled = False

    def take(self) -> int:
        """The next ticket: its item's turn comes after those of every ticket taken before."""
        with self._changed:
            self._taken += 1
            self._running.append(self._taken)
            return self._taken

    def run(self, ticket: int, fn: Callable[..., R], *args) -> R:
        """`fn(*args)` here as the item of `ticket`, which ends when it returns or raises."""
        token = _CURRENT.set((self, ticket))
        try:
            return fn(*args)
        finally:
            _CURRENT.reset(token)
            with self._changed:
                self._running.remove(ticket)
                self._changed.notify_all()

    def wait(self, ticket: int) -> bool:
        """Block until `ticket`'s turn; whether it waited for another item."""
        with self._changed:
            waited = False
            while not self.cancelled and self._running[0] != ticket:
                waited = True
                self._changed.wait()
            if self.cancelled:
                raise Cancelled("stopped before this item's turn")
            return waited

    def cancel(self) -> None:
        """Every item that waits for its turn, or checks it, raises `Cancelled`."""
        with self._changed:
            self.cancelled = True
            self._changed.notify_all()


#: the turns and ticket of the item this thread runs (None: an item that runs alone)
_CURRENT: ContextVar[tuple[Turns, int] | None] = ContextVar("labeler_turn", default=None)


def wait_turn() -> bool:
    """Block until this thread's item may use the engine (at once for an item that runs
    alone); whether another item's work ran meanwhile, whose answers the caller may now find
    in the call cache."""
    current = _CURRENT.get()
    return current is not None and current[0].wait(current[1])


def check_turn() -> None:
    """`Cancelled` if this thread's item's turns were cancelled."""
    current = _CURRENT.get()
    if current is not None and current[0].cancelled:
        raise Cancelled("stopped during this item's turn")
