"""Where labeler keeps its per-user state (the LLM call cache, converted models)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The cache folder: `cache_dir` (--cache-dir), else $LABELER_CACHE_DIR, else the per-user
    cache ($XDG_CACHE_HOME/labeler, default ~/.cache/labeler). Created if missing."""
    if cache_dir is None:
        cache_dir = os.environ.get("LABELER_CACHE_DIR") or None
    if cache_dir is None:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        cache_dir = Path(base) / "labeler"
    root = Path(cache_dir).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root
