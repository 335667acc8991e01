"""`labeler build`s for the build benchmarks, each on a fresh call cache that shares one
conversion of the bundled model: whole processes, timed, their data hashed; or in this process,
with what its generate calls ran (and, recorded, what they asked and answered)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from copy import copy
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
    return seconds, data_sha(out.glob("utility/nq-sample/smollm2-135m/v*/data-*.jsonl"))


def data_sha(files) -> str:
    """sha256 of the data files' bytes in file-name order."""
    digest = hashlib.sha256()
    for file in sorted(files):
        digest.update(file.read_bytes())
    return digest.hexdigest()


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


def measured_build(out: Path, cache: Path, *, limit: int, dtype: str | None = None):
    """(the DecodeStats of its generate calls, its version folder) of a utility build of the
    bundled NQ sample's human gold pools in this process, by the bundled SmolLM2 in `dtype`."""
    from labeler import build
    from labeler.llm import load_backend
    from labeler.llm.config import LLMConfig
    from labeler.tasks.utility import UtilityConfig

    # the model the build loads (one per process and settings): its stats count the build's
    backend = load_backend("smollm2-135m", dtype=dtype, cache_dir=cache, use_cache=False)
    before = copy(backend.decoder.stats)
    [built] = build("utility", UtilityConfig(dataset="nq-sample", limit=limit, pool="hgp"),
                    [LLMConfig("smollm2-135m", dtype=dtype)], out=out, cache_dir=cache)
    return backend.decoder.stats - before, built.path


@contextmanager
def recorded_calls(backend) -> Iterator[list[tuple[list, object, dict]]]:
    """The generate calls `backend` streams while inside, as they stream: each one's (prompts,
    sampling, {a prompt's place: its completions})."""
    calls, stream = [], backend.stream

    def recording(prompts, sampling):
        answers = {}
        calls.append((prompts, sampling, answers))
        for i, completions in stream(prompts, sampling):
            answers[i] = completions
            yield i, completions

    backend.stream = recording
    try:
        yield calls
    finally:
        del backend.stream
