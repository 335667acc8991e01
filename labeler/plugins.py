"""Installed plugins: the entry points other packages declare in labeler's groups, loaded so
that nothing one does at import (a missing module, an ImportError, `sys.exit`) can end a
command that does not ask for it.

    load_plugin("labeler.tasks", "known", "labeler_known.task:KnownTask", "labeler-known", Task)
    installed({"labeler.tasks": TASKS})   # [Plugin(package, version, group, name, value,
                                          #  error)], for `labeler plugins`
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from labeler.errors import PluginError

#: the plugins already warned about in this process, so each failure is said once
_WARNED: set[tuple[str, str, str]] = set()


@dataclass(frozen=True)
class Plugin:
    """One entry point of an installed package, and why it does not load (None if it does)."""

    package: str
    version: str
    group: str
    name: str
    value: str
    error: str | None


def load_plugin(group: str, name: str, value: str, package: str, base: type | None = None):
    """The object entry point `name` = `value` of `package` names, its module imported now;
    PluginError with one line when that fails in any way (`sys.exit` at import included) or
    when it is not a subclass of `base`. A KeyboardInterrupt the plugin raises is such a
    failure; one a Ctrl-C pressed meanwhile raises goes on."""
    module, colon, attribute = value.partition(":")
    try:
        if not colon or not module or not attribute:
            raise ValueError(f"'{value}' is not 'module:attribute'")
        with contextlib.redirect_stdout(sys.stderr), _ctrl_c() as pressed:  # stdout: --json's
            found = getattr(importlib.import_module(module.strip()), attribute.strip())
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # a plugin may do anything
        if isinstance(exc, KeyboardInterrupt) and pressed:
            raise
        raise PluginError(group, name, package, _said(exc)) from exc
    if base is not None and not (isinstance(found, type) and issubclass(found, base)):
        raise PluginError(group, name, package, f"'{value}' is {_a(found)}, not a subclass of "
                          f"{base.__module__}.{base.__qualname__}")
    return found


@contextlib.contextmanager
def _ctrl_c() -> Iterator[list]:
    """A list that holds the signal if Ctrl-C is pressed in the block (a SIGINT handler that
    notes it, then raises KeyboardInterrupt as Python's does); off the main thread, or under
    another handler, where a press cannot be told from a raise, it holds None from the start."""
    pressed: list = []

    def noted(signum, frame):
        pressed.append(signum)
        raise KeyboardInterrupt

    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        pressed.append(None)
        yield pressed
        return
    signal.signal(signal.SIGINT, noted)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def warn_skipped(error: PluginError) -> None:
    """One warning line, once a process, saying a plugin is skipped and why."""
    key = (error.group, error.name, error.package)
    if key not in _WARNED:
        from labeler.progress import warning
        from labeler.terminal import markup_safe  # a plugin's error may say anything

        _WARNED.add(key)
        warning(f"skipping the {error.group} plugin '{markup_safe(error.name)}' of package "
                f"{markup_safe(error.package)}: {markup_safe(error.reason)}")


def installed(registries: Mapping[str, Any]) -> list[Plugin]:
    """Every entry point installed packages declare in the groups of `registries` (group ->
    the `labeler.lazy.Registry` that reads it), each loaded as that registry loads it, in
    package, group and name order."""
    found = []
    for group, registry in registries.items():
        for point in entry_points(group=group):
            package = point.dist.name if point.dist else "?"
            error = _taken(registry, point.name, package)
            try:
                if error is None:
                    registry.plugin(point.name)
            except PluginError as exc:
                error = exc.reason
            found.append(Plugin(package, point.dist.version if point.dist else "?", group,
                                point.name, point.value, error))
    order = list(registries)
    return sorted(found, key=lambda p: (p.package.lower(), order.index(p.group), p.name))


def unused(registry: Any) -> Iterator[PluginError]:
    """A PluginError for each entry point of `registry`'s group that it does not use: its name
    is built in, or an earlier package took it."""
    for point in entry_points(group=registry.group) if registry.group else ():
        package = point.dist.name if point.dist else "?"
        reason = _taken(registry, point.name, package)
        if reason is not None:
            yield PluginError(registry.group, point.name, package, reason)


def _taken(registry: Any, name: str, package: str) -> str | None:
    """Why entry point `name` of `package` is not the one `registry` uses (a built-in name, or
    one an earlier package took), None where it is."""
    owner = registry.packages.get(name)
    if owner == package:
        return None
    return (f"the name '{name}' is " + ("labeler's own" if owner is None else
                                         f"taken by package {owner}") + "; this one is not used")


def _said(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}) at import"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _a(found: object) -> str:
    """What `found` is, in a few words: "a function", "the class Foo"."""
    if isinstance(found, type):
        return f"the class {found.__qualname__}"
    return f"a {type(found).__name__}"
