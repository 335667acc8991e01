"""How fast a served model may be asked, and what it was asked: a request-rate and a
token-rate limit shared by every thread of one client (`--max-rps`, `--max-tpm`, beside
`--concurrency`), and the tokens its answers' `usage` reports, with their cost at the prices
given (`--price-in`, `--price-out`, in dollars per million tokens)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

#: the window a token-rate limit counts over, in seconds
MINUTE = 60.0


@dataclass
class Limits:
    """At most `max_rps` requests a second and `max_tpm` tokens (as answers report them) a
    minute; None: no limit. `wait` holds a request until it may go, by `clock` and `sleep`
    (a test's own clock in place of the monotonic one)."""

    max_rps: float | None = None
    max_tpm: int | None = None
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    _next: float = 0.0  # when the next request may go (monotonic seconds)
    _spent: deque = field(default_factory=deque)  # (when, tokens) of the last minute's answers
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self) -> None:
        """Sleep until a request may go without passing either limit."""
        while (pause := self._reserve()) > 0:
            self.sleep(pause)

    def spent(self, tokens: int) -> None:
        """Count an answer's tokens against the token-rate limit."""
        if self.max_tpm:
            with self._lock:
                self._spent.append((self.clock(), tokens))

    def _reserve(self) -> float:
        """0 (and the request's slot taken) if a request may go now, else seconds to wait."""
        with self._lock:
            now = self.clock()
            if self.max_tpm:
                while self._spent and self._spent[0][0] <= now - MINUTE:
                    self._spent.popleft()
                if sum(t for _, t in self._spent) >= self.max_tpm:
                    return self._spent[0][0] + MINUTE - now
            if self.max_rps:
                if now < self._next:
                    return self._next - now
                self._next = now + 1 / self.max_rps
            return 0.0


@dataclass
class Usage:
    """Requests answered and the tokens their answers' `usage` reported (a server that
    reports none adds requests only)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, usage: dict | None) -> int:
        """Add one answer's `usage`; its total tokens."""
        usage = usage if isinstance(usage, dict) else {}
        prompt, completion = (int(usage.get(k) or 0) for k in ("prompt_tokens",
                                                                 "completion_tokens"))
        with self._lock:
            self.requests += 1
            self.prompt_tokens += prompt
            self.completion_tokens += completion
        return prompt + completion

    def snapshot(self) -> dict:
        with self._lock:
            return {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens}


def since(now: dict, before: dict) -> dict:
    """The usage between two `Usage.snapshot`s."""
    return {k: now[k] - before.get(k, 0) for k in now}


def cost(usage: dict, price_in: float | None, price_out: float | None) -> float | None:
    """Dollars for `usage` at `price_in`/`price_out` dollars per million prompt/completion
    tokens; None without a price.

    >>> cost({"prompt_tokens": 2_000_000, "completion_tokens": 500_000}, 0.15, 0.6)
    0.6
    """
    if price_in is None and price_out is None:
        return None
    return round((usage["prompt_tokens"] * (price_in or 0)
                  + usage["completion_tokens"] * (price_out or 0)) / 1e6, 6)
