"""Names imported on first use: a package's exports (PEP 562), so that importing one module of a
package does not import its siblings, a registry's "module:attribute" entries (`Registry`:
the built-in ones and those installed plugins declare as entry points), and a heavy library a
module names at its top (`LazyModule`: the hf backend's torch, imported when a model loads).

    __getattr__, __dir__ = lazy_exports(__name__, {"load_artifact": "labeler.artifacts.reader"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable, Callable]:
    """The `__getattr__` and `__dir__` of `package`, whose public names (`exports`: name ->
    the module that defines it) are imported from their modules when first asked for."""

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name]), name)

    def __dir__() -> list[str]:
        return sorted({*vars(importlib.import_module(package)), *exports})

    return __getattr__, __dir__


class LazyModule:
    """Module `name`, imported when one of its attributes is first read (the modules `before`
    first), so that the module naming it stays cheap to import: `torch = LazyModule("torch")`.
    """

    def __init__(self, name: str, *before: str) -> None:
        self._name, self._before, self._module = name, before, None

    def __getattr__(self, attribute: str):
        if self._module is None:
            for module in self._before:
                importlib.import_module(module)
            self._module = importlib.import_module(self._name)
            # its names copied here, so that later reads find them without this method (as
            # fast as the module's own): a hot loop's `np.` costs what it did before
            vars(self).update({k: v for k, v in vars(self._module).items()
                               if k not in ("_name", "_before", "_module")})
        return getattr(self._module, attribute)


def load_entry(entry: str):
    """The object a registry entry "module:attribute" names, its module imported now."""
    module, attr = entry.split(":")
    return getattr(importlib.import_module(module), attr)


class Registry(Mapping):
    """Named "module:attribute" entries, imported when first looked up: the built-in ones, then
    those installed packages declare under the entry-point `group` (a plugin may not take a
    built-in name), each of which must name a subclass of `base` ("module:Class"). Looking up
    a name it lacks raises UnknownNameError listing its names; a plugin that cannot be loaded
    raises PluginError when asked for, and `loaded()` skips it with a warning."""

    def __init__(self, what: str, entries: Mapping[str, str], group: str | None = None,
                 base: str | None = None) -> None:
        self.what, self.group, self.base = what, group, base
        self._builtin = dict(entries)
        self._read: tuple[tuple[str, ...], dict[str, str], dict[str, str]] | None = None

    def _scan(self) -> tuple[tuple[str, ...], dict[str, str], dict[str, str]]:
        """(sys.path, name -> entry, plugin name -> its package), the entry points read again
        only when `sys.path` changed (a package added to it, as a test does)."""
        if self._read is None or self._read[0] != tuple(sys.path):
            found, packages = dict(self._builtin), {}
            for point in entry_points(group=self.group) if self.group else ():
                if point.name not in found:
                    found[point.name] = point.value
                    packages[point.name] = point.dist.name if point.dist else "?"
            self._read = (tuple(sys.path), found, packages)
        return self._read

    @property
    def entries(self) -> dict[str, str]:
        """Name -> "module:attribute", the built-in ones first."""
        return self._scan()[1]

    @property
    def packages(self) -> dict[str, str]:
        """Plugin name -> the installed package that declares it."""
        return self._scan()[2]

    def plugin(self, name: str):
        """The object plugin `name` names (`labeler.plugins.load_plugin`: PluginError with one
        line if it cannot be loaded)."""
        from labeler.plugins import load_plugin

        base = load_entry(self.base) if self.base else None
        return load_plugin(self.group, name, self.entries[name], self.packages[name], base)

    def loaded(self) -> dict[str, object]:
        """Name -> object of every entry that loads, in order; a plugin that cannot be loaded, or
        that takes a name already taken, is left out, with one warning naming its package and
        the error."""
        from labeler.errors import PluginError
        from labeler.plugins import unused, warn_skipped

        found = {}
        for name in self.entries:
            try:
                found[name] = self[name]
            except PluginError as error:
                warn_skipped(error)
        for error in unused(self):
            warn_skipped(error)
        return found

    def __getitem__(self, name: str):
        if name not in self.entries:
            from labeler.errors import UnknownNameError  # importing labeler imports only this

            raise UnknownNameError(self.what, name, sorted(self.entries))
        return self.plugin(name) if name in self.packages else load_entry(self.entries[name])

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)
