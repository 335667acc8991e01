"""labeler: turn LLM behaviour into versioned, publishable RAG label datasets."""

from __future__ import annotations

from functools import cache

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # `__version__` is read from the installed metadata on first use: importlib.metadata costs
    # more to import than `labeler score` spends on a ranking's metrics
    if name == "__version__":
        return _version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("labeler")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0"
