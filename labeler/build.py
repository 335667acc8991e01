"""`labeler build`: source -> pools -> for each LLM: labels -> one versioned artifact per LLM.

Everything that can fail on user input (unknown dataset or artifact, missing corpus, bad run
file, an LLM that cannot be loaded, a version that exists already) fails before the first LLM
call, so a failed build leaves no artifact folder behind.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from labeler.artifacts import artifact_dir, write_artifact
from labeler.errors import InputError, UnknownNameError
from labeler.llm import Backend, load_backend, resolve_model
from labeler.retrieval import build_pools
from labeler.sources import JSONL_PREFIX, load_source
from labeler.tasks import utility

#: artifacts `build` can write (seer and rubric are separate tasks).
ARTIFACTS = ("utility",)


@dataclass
class Built:
    """One written artifact: the LLM's short name, its version folder, its statistics."""

    llm: str
    path: Path
    stats: dict


def build(
    dataset: str,
    llms: Sequence[str],
    *,
    artifact: str = "utility",
    pool: str = "rp",
    k: int = 20,
    limit: int | None = None,
    backend: str = "hf",
    batch_size: int | None = None,
    out: str | Path = "out",
    version: str | None = None,
    run: str | Path | None = None,
    encoder: str | None = None,
    corpus: str | Path | None = None,
    cache_dir: str | Path | None = None,
    with_likelihood: bool = False,
) -> list[Built]:
    """Label the same pools of `dataset` for each LLM in `llms`; write one artifact per LLM.

    All LLMs are loaded before retrieval and before any is asked, so a model that cannot be
    loaded stops the build before any work (at the price of holding all of them in memory).
    """
    if artifact not in ARTIFACTS:
        raise UnknownNameError("artifact", artifact, list(ARTIFACTS))
    if not llms:
        raise InputError("name at least one LLM", field_name="llm")
    source = load_source(dataset, corpus=corpus, limit=limit)
    loaded: dict[str, tuple[str, Backend]] = {}  # alias -> (the --llm name, its backend)
    for name in dict.fromkeys(llms):
        model = load_backend(name, backend=backend, batch_size=batch_size, cache_dir=cache_dir)
        if model.alias in loaded:
            raise InputError(f"--llm {loaded[model.alias][0]!r} and --llm {name!r} are both "
                             f"'{model.alias}': their artifacts would share one folder",
                             field_name="llm", hint="name each model once")
        loaded[model.alias] = (name, model)
    backends = [model for _, model in loaded.values()]
    # published manifests name a model without this machine's paths: repo id or file name
    public_ids = {alias: resolve_model(name).identity for alias, (name, _) in loaded.items()}
    folder = dataset_folder(source.name)
    for model in backends:  # a version that exists already fails now, not after the labelling
        artifact_dir(out, artifact=artifact, dataset=folder, llm=model.alias, version=version)
    # retrieval comes after the cheap checks: a mistyped --llm fails before minutes of encoding
    pools = build_pools(source, pool=pool, k=k, run=run, encoder=encoder, cache_dir=cache_dir)
    built = []
    for model in backends:
        labels = utility.label(model, source.queries, pools, llm=model.alias, pool=pool,
                               with_likelihood=with_likelihood)
        records = labels.records
        manifest = {
            "model_id": public_ids[model.alias],
            "model_revision": model.revision,
            "source_dataset": source.name,
            "source_revision": source.revision,
            "prompt_templates": utility.PROMPT_TEMPLATES,
            "sampling": utility.SAMPLING.key(),
            "seed": utility.SAMPLING.seed,
            "backend": backend,
            **pools.describe(),
            "limit": limit,
            "with_likelihood": with_likelihood,
            "counts": {
                "candidates": sum(len(r["candidates"]) for r in records),
                "known": sum(r["known"] for r in records),
                "utilitarian": sum(len(r["utility_pids"]) for r in records),
            },
        }
        path = write_artifact(records, out=out, artifact=artifact, dataset=folder,
                              llm=model.alias, version=version, manifest=manifest,
                              stats=labels.stats)
        built.append(Built(model.alias, path, labels.stats))
    return built


def dataset_folder(name: str) -> str:
    """The folder name of a dataset: its name, or for `jsonl:PATH` the file's stem."""
    if name.startswith(JSONL_PREFIX):
        name = Path(name[len(JSONL_PREFIX):]).name.split(".")[0]
    return re.sub(r"[^A-Za-z0-9._+-]", "-", name).lstrip("._+-") or "dataset"
