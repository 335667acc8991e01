"""Names imported on first use: a package's exports (PEP 562), so that importing one module of a
package does not import its siblings, and a registry's "module:attribute" entries.

    __getattr__, __dir__ = lazy_exports(__name__, {"load_artifact": "labeler.artifacts.reader"})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


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


def load_entry(entry: str):
    """The object a registry entry "module:attribute" names, its module imported now."""
    module, attr = entry.split(":")
    return getattr(importlib.import_module(module), attr)
