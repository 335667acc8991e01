"""Whole `labeler build` processes for the build benchmarks: timed, their data hashed, each on
a fresh call cache that shares one conversion of the bundled model."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path


def timed_build(out: Path, cache: Path, *options: str) -> tuple[float, str]:
    """(seconds, sha256 of the data files in file-name order) of one `labeler build` of the
    bundled NQ sample by the bundled SmolLM2 with `options`."""
    command = [sys.executable, "-m", "labeler", "-q", "build", "--dataset", "nq-sample",
               "--llm", "smollm2-135m", *options, "--cache-dir", str(cache), "--out", str(out)]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.perf_counter() - start
    digest = hashlib.sha256()
    for file in sorted(out.glob("utility/nq-sample/smollm2-135m/v*/data-*.jsonl")):
        digest.update(file.read_bytes())
    return seconds, digest.hexdigest()


def fresh_caches(root: Path, *names: str) -> dict[str, Path]:
    """An empty call cache per name under `root`, all sharing one conversion of the bundled
    GGUF, made first and outside any timing."""
    models = root / "models"
    timed_build(root / "warm", root / "warm-cache", "--pool", "hgp", "--limit", "1")
    (root / "warm-cache" / "models").rename(models)
    caches = {name: root / f"cache-{name}" for name in names}
    for cache in caches.values():
        cache.mkdir()
        (cache / "models").symlink_to(models)
    return caches
