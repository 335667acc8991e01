"""Where labeler keeps its per-user state (the LLM call cache, converted models)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from labeler import settings


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The cache folder: `cache_dir` (--cache-dir), else `settings.cache_dir()`
    ($LABELER_CACHE_DIR, else $XDG_CACHE_HOME/labeler, else ~/.cache/labeler). Created if
    missing."""
    root = settings.cache_dir() if cache_dir is None else Path(cache_dir).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def atomic_file(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temp file beside `path` for writing; rename it into place only if the block
    succeeds, so readers never see a half-written file (it is removed on any failure)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
