"""One progress bar for every long loop: rich on a TTY; where stderr is a file or a pipe (a
batch job's log) a plain line every few seconds instead; nothing with --quiet."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, TypeVar

from labeler import settings
from labeler.terminal import escape

if TYPE_CHECKING:  # rich is imported when something is first shown (`labeler score --json`
    from rich.console import Console  # shows nothing)
    from rich.progress import Progress

T = TypeVar("T")


@cache
def stderr() -> Console:
    """The console of progress, hints and logs: stderr, so stdout stays clean for results and
    --json."""
    from rich.console import Console

    return Console(stderr=True)


def _plain(description: str, total: int | None) -> Iterator[callable]:
    """`advance(n)` that writes `DESCRIPTION: done/total (p%), Ns elapsed, eta Ns` on stderr
    at most every `settings.progress_seconds()`, and a last line when the loop ends, if it
    wrote any and that was not the end: a log shows that long work moves, a short loop adds
    nothing to it."""
    every, start = settings.progress_seconds(), time.monotonic()
    state = {"done": 0, "said": start, "said_done": 0}

    def say(now: float) -> None:
        done, elapsed = state["done"], now - start
        line = f"{description}: {done:,}"
        if total:
            line += f"/{total:,} ({done / total:.0%})"
        line += f", {elapsed:.0f}s elapsed"
        if total and 0 < done < total:
            line += f", eta {elapsed / done * (total - done):.0f}s"
        print(line, file=sys.stderr, flush=True)
        state["said"], state["said_done"] = now, done

    def advance(n: int = 1) -> None:
        state["done"] += n
        now = time.monotonic()
        if now - state["said"] >= every:
            say(now)

    yield advance
    if state["said"] > start and state["said_done"] != state["done"]:
        say(time.monotonic())


#: the live display while any bar is shown: a bar opened inside another (the hf backend's
#: batches inside the build's shards) becomes one more line of it, as rich allows one display
_live: Progress | None = None
#: how many bars are open that already count the work of any bar opened inside them
_covering = 0


@contextmanager
def progress_bar(description: str, total: int | None, *, covers_inner: bool = False
                 ) -> Iterator[callable]:
    """Yield `advance(n)`; draws done/total, rate-derived ETA and elapsed time on a TTY
    (done alone where `total` is None: not known in advance; nothing where it is 0).
    Bars opened while another is shown stack below it and go when done, but for those opened
    inside a bar that `covers_inner` (its own work counted again: the call cache's misses,
    computed by the backend's batches), which draw nothing: each step is reported once.
    Where stderr is not a terminal, the same as plain lines every few seconds (`_plain`)."""
    global _covering
    shown = not (settings.quiet() or total is not None and total <= 0 or _covering)
    _covering += covers_inner
    try:
        if shown:
            yield from _drawn(description, total)
        else:
            yield lambda n=1: None
    finally:
        _covering -= covers_inner


def _drawn(description: str, total: int | None) -> Iterator[callable]:
    """`progress_bar`'s bar, drawn: rich on a terminal, else plain lines."""
    global _live
    if not sys.stderr.isatty():
        yield from _plain(description, total)
        return
    if _live is not None:
        bar, task = _live, _live.add_task(description, total=total)
        try:
            yield lambda n=1: bar.advance(task, n)
        finally:
            bar.remove_task(task)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=stderr(),
        transient=True,
    ) as bar:
        _live = bar
        try:
            task = bar.add_task(description, total=total)
            yield lambda n=1: bar.advance(task, n)
        finally:
            _live = None


def other_bars_off() -> None:
    """Where stderr is not a terminal (a log, a pipe) or with --quiet, no other library draws
    its tqdm bar (transformers' GGUF conversion, huggingface_hub's "Fetching files",
    datasets'): labeler's own lines say where long work is, one per step. Set through the
    libraries' environment switches (`settings.BAR_SWITCHES`, which worker processes
    inherit), read when each is imported; one imported already is switched off directly."""
    if sys.stderr.isatty() and not settings.quiet():
        return
    settings.bar_switches_on()
    if "huggingface_hub" in sys.modules:  # transformers' bars follow huggingface_hub's
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    if "datasets" in sys.modules:
        from datasets.utils import logging as datasets_logging

        datasets_logging.disable_progress_bar()


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate `items` under a progress bar."""
    if total is None:
        total = len(items)  # type: ignore[arg-type]
    with progress_bar(description, total) as advance:
        for item in items:
            yield item
            advance(1)


def info(message: str) -> None:
    """A hint or status line on stderr (suppressed by --quiet): wrapped at words on a
    terminal, one line however long off one (a log reads and greps it whole); a control
    character in it (a path's, a name's) shown as its escape."""
    if not settings.quiet():
        console = stderr()
        console.print(escape(message), soft_wrap=not console.is_terminal)


def warning(message: str) -> None:
    """A line on stderr about something the user did not ask for and should know (e.g. a
    fallback model); shown even with --quiet."""
    stderr().print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False,
                   soft_wrap=True)


@contextmanager
def transformers_quiet() -> Iterator[None]:
    """Silence transformers' progress bars (and huggingface_hub's with them) and its info and
    warning logs for one block: for loads of local files, whose bars say nothing."""
    from transformers.utils import logging as hf_logging

    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:  # as it was: off stays off (`other_bars_off`)
            hf_logging.enable_progress_bar()
