"""`labeler judge`: one judge method over the same pools as `labeler build` -> a submission.

The source and pools come from the same two steps as the labels' (`labeler.workflows.build`), the
judgments from `labeler.judges.methods` shard by shard under one progress bar. The submission
(selection or ranking, one schema-valid line per query) and, beside it, `<name>.manifest.json`
(method, LLM, prompt templates with their sha256, pools, statistics, and the submission's
own name and sha256) are each written atomically, after every judgment is made: nothing is
left half-written, and a rerun removes the old manifest before it writes the submission, so a
kill between the two never leaves a submission beside the manifest of another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from labeler import __version__
from labeler.artifacts.manifest import hashed_templates
from labeler.errors import InputError
from labeler.judges.methods import Judge, JudgeConfig
from labeler.llm import check_operation
from labeler.llm.calls import Calls
from labeler.llm.config import LLMConfig
from labeler.llm.models import check_access, resolve_model
from labeler.paths import atomic_file, published_file
from labeler.progress import track
from labeler.retrieval.pools import check_pools
from labeler.schemas import check
from labeler.tasks.base import make_shards
from labeler.tasks.shard_plan import DEFAULT_SHARD_SIZE
from labeler.workflows.steps import (
    config_pools,
    config_source,
    published_config,
    published_source,
)


@dataclass
class Judged:
    """A written submission: its kind, file, manifest file and statistics."""

    kind: str
    path: Path
    manifest_path: Path
    stats: dict


def manifest_path(out: str | Path) -> Path:
    """`FILE.manifest.json` beside the submission `FILE.jsonl`."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".jsonl") + ".manifest.json")


def judge(config: JudgeConfig, llm: LLMConfig | None, *, out: str | Path,
          shard_size: int = DEFAULT_SHARD_SIZE, cache_dir: str | Path | None = None) -> Judged:
    """Judge the pools `config` names with `llm` (None only for `retrieval`) and write the
    submission to `out` (a .jsonl file) with its manifest beside it.

    Everything that can fail on user input fails before the model is loaded; the model is
    loaded before retrieval, so a mistyped --llm fails before minutes of encoding.
    """
    out = Path(out)
    if out.suffix != ".jsonl":
        raise InputError("the submission is JSONL: name a .jsonl file", str(out),
                         field_name="out")
    method = Judge(config)
    if llm is None and method.templates():
        raise InputError(f"{config.method} asks an LLM: name one", field_name="llm")
    if llm is not None and method.method.operation:
        check_operation(llm.backend, method.method.operation, f"--method {config.method}")
    if llm is not None:
        check_access(resolve_model(llm.name))  # an unknown or gated one fails before the data
    source = config_source(config)
    templates = method.templates(source.kind)  # questions or claims; another kind fails here
    check_pools(source, pool=config.pool, k=config.k, run=config.run, encoder=config.encoder,
                index=config.index, bm25=config.bm25())
    model = None if llm is None or not templates else llm.load(cache_dir)
    pools = config_pools(source, config, cache_dir)
    records = []
    for shard in track(make_shards(source.queries, pools, shard_size, kind=source.kind),
                       f"{config.method} judgments"):
        records += method.submit(None if model is None else Calls(model, llm.router(cache_dir)),
                                 shard)
    for i, record in enumerate(records, 1):  # the method's bug, not the user's: still one line
        check(record, f"submission-{method.kind}", path=str(out), line=i)
    stats = method.statistics(records)
    manifest = {
        "tool_version": __version__,
        "kind": method.kind,
        "method": config.method,
        "with_answer": method.asks_answer,
        "llm": None if model is None else {**llm.describe(), "alias": model.alias,
                                           "revision": model.revision},
        "prompt_templates": hashed_templates(templates),
        "sampling": {name: s.key() for name, s in method.decoding.items()},
        **published_source(source),
        **pools.describe(),
        "config": published_config(config),
        "stats": stats,
    }
    # a submission is never beside another's manifest: the old one goes first, and a kill
    # before the new one is written leaves the submission without any
    manifest_path(out).unlink(missing_ok=True)
    with atomic_file(out) as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    manifest["submission"] = published_file(out)
    with atomic_file(manifest_path(out)) as f:
        f.write(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return Judged(method.kind, out, manifest_path(out), stats)
