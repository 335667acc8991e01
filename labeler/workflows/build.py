"""`labeler build`: source -> pools -> for each LLM: a task's labels, shard by shard -> one
versioned artifact per LLM.

Generic over tasks: resolve the task, run its checks, load the models, make the candidates,
then map the task's `label` over shards of queries through an executor, each shard's tables
written as soon as it is done (or, for a task that settles build-level values first, once
every shard is labelled). Everything that can fail on user input fails
before the first LLM call; a killed build started again resumes at its unfinished shards
(the call cache serves what the unfinished shard had already asked).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from labeler import __version__
from labeler.artifacts.manifest import read_manifest
from labeler.artifacts.writer import VersionWriter, artifact_dir, check_caller_manifest
from labeler.errors import InputError, PromptRefusedError, UnknownNameError
from labeler.executors import load_executor
from labeler.executors.base import Executor
from labeler.llm import BACKENDS, check_operation, resolve_model
from labeler.llm.calls import Calls
from labeler.llm.config import LLMConfig, ModelIdentity
from labeler.llm.models import check_access
from labeler.paths import cache_root, check_writable
from labeler.progress import info, track
from labeler.retrieval.pools import check_pools
from labeler.sources import answer_extraction
from labeler.sources.types import Source
from labeler.tasks import load_task
from labeler.tasks.base import NO_LLM, Shard, Task, TaskConfig, make_shards
from labeler.tasks.shard_plan import plan_shards
from labeler.workflows.labelling import Job, label_shards
from labeler.workflows.served_usage import ServedTally
from labeler.workflows.steps import (
    config_pools,
    config_source,
    dataset_folder,
    published_config,
    published_source,
)


@dataclass
class Built:
    """One written artifact: the LLM's short name, its version folder, its statistics, and
    how many queries it left out (a served model's server refused a prompt as too long)."""

    llm: str
    path: Path
    stats: dict
    unanswered: int = 0


def build(
    artifact: str,
    config: TaskConfig,
    llms: Sequence[LLMConfig],
    *,
    out: str | Path = "out",
    version: str | None = None,
    shard_size: int | None = None,
    cache_dir: str | Path | None = None,
    executor: Executor | None = None,
) -> list[Built]:
    """Label the same pools of `config.dataset` with task `artifact` for each LLM in `llms`;
    write one artifact version per LLM.

    All LLMs are loaded before retrieval and before any is asked, so a model that cannot be
    loaded stops the build before any work (at the price of holding all of them in memory).
    The shards follow `plan_shards` for the executor's workers (`shard_size`: that many
    queries each); a resumed version keeps the plan it was started with.
    """
    task, source, task_manifest = check_build(artifact, config, llms, out=out, version=version)
    executor = executor or load_executor("local")
    # workers in other processes name the cache folder by its absolute path (their models load
    # from it; on Ray their calls go through the driver's keeper)
    cache = str(cache_root(cache_dir).resolve())
    loaded = _identify(executor, llms, task, cache) if task.asks_llm else {NO_LLM: (None, None)}
    extractor = None
    if config.answer_extractor:  # runs with the first LLM's backend settings
        extractor_config = replace(llms[0], name=config.answer_extractor)
        extractor = extractor_config.load(cache_dir)
        task_manifest = answer_extraction.add_to_manifest(
            task_manifest, extractor_config.describe(), extractor.revision)
    writers = _writers(task, source, config, loaded, task_manifest, out=out, version=version)
    try:  # a build that fails gives its folders up, as a killed one does, to be resumed
        if extractor is not None:  # after the cheap checks, before retrieval and labelling
            source.queries = answer_extraction.extract_answers(
                Calls(extractor, extractor_config.router(cache_dir)), source.queries)
        # retrieval comes after the cheap checks: a mistyped --llm fails before minutes of
        # encoding
        pools = config_pools(source, config, cache_dir, executor)
        built = []
        for llm, writer, manifest in writers:
            sizes = _shard_plan(writer, executor, llm, len(source.queries), shard_size)
            shards = make_shards(source.queries, pools, sizes, kind=source.kind)
            built.append(_write_version(
                task, writer, {**manifest, "shard_size": max(sizes, default=0),
                               **pools.describe()},
                Job(artifact, config, llm, cache), shards, executor))
        return built
    finally:
        for _, writer, _ in writers:
            writer.close()


def _writers(task: Task, source: Source, config: TaskConfig,
             loaded: dict[str, tuple[LLMConfig, ModelIdentity]], task_manifest: dict, *,
             out: str | Path, version: str | None
             ) -> list[tuple[LLMConfig, VersionWriter, dict]]:
    """A writer per LLM with its version's manifest so far; a version that exists fails now."""
    folder = dataset_folder(source.name)
    base = {
        **published_source(source),
        **task_manifest,
        "config": published_config(config),
    }
    writers = []
    for alias, (llm, model) in loaded.items():
        manifest = {"model_id": "none", "model_revision": None, **base} if llm is None else {
            "model_id": llm.describe()["model"], "model_revision": model.revision, **base,
            "llm_config": llm.describe(), "llm_runtime": {
                k: v for k, v in model.key.items() if k not in ("model_id", "revision")}}
        writer = VersionWriter(out, kind=type(task), dataset=folder, llm=alias,
                               version=version,
                               build_id=_build_id(manifest, model.key if model else {}))
        check_caller_manifest(manifest, artifact=task.name, dataset=folder, llm=alias,
                              version=writer.version)
        for stale, why in writer.abandoned():
            info(f"{stale}: {why}")
        writers.append((llm, writer, manifest))
    return writers


def _shard_plan(writer: VersionWriter, executor: Executor, llm: LLMConfig | None,
                queries: int, shard_size: int | None) -> list[int]:
    """The sizes of `writer`'s shards: those it recorded when resumed, else `shard_size`
    each, else as many as keep the executor's workers busy."""
    if shard_size is not None:
        asked = plan_shards(queries, size=shard_size)
        sizes = writer.plan(asked)
        if sizes != asked:
            info(f"{writer.llm}: resuming with its {len(sizes)} shards of up to {max(sizes)} "
                 f"queries, not --shard-size {shard_size}")
        return sizes
    return writer.plan(plan_shards(queries, executor.worker_count(llm.gpus if llm else 0)))


def _write_version(task: Task, writer: VersionWriter, manifest: dict, job: Job,
                   shards: list[Shard], executor: Executor) -> Built:
    """Label the shards `writer` has not written with `job` and finish its version; a task
    that settles stages every shard's records first and derives its tables from all."""
    done = writer.labelled() if task.settles else writer.completed()
    served = ServedTally()  # each worker's count of what it asked a served model
    if done:
        info(f"{writer.llm}: resuming {writer.staging.name}, {len(done)} of {len(shards)} "
             f"shards already {'labelled' if task.settles else 'written'}")
    for shard, labelled in label_shards(executor, job, [s for s in shards
                                                        if s.index not in done], served):
        writer.leave_out(shard.index, labelled.unanswered)  # none: a killed build's record gone
        if task.settles:
            writer.stage(shard.index, labelled.records)
        else:
            writer.write_shard(shard.index, task.derive(labelled.records, {}))
    unanswered = writer.left_out()
    if unanswered and len(unanswered) == sum(len(shard.queries) for shard in shards):
        writer.discard()  # nothing answered: a rerun asks every prompt again
        raise InputError(f"{writer.llm}: each of the {len(unanswered)} queries left out, the "
                         "server refusing a prompt of each as too long: "
                         f"{unanswered[0]['reason']}", hint=PromptRefusedError.hint)
    settled = {}
    if task.settles:  # the tables need what only the whole build decides
        settled = {"settled": task.settle(writer.staged())}
        for index in track(sorted(writer.labelled()), f"{task.name} tables for {writer.llm}"):
            writer.write_shard(index, task.derive(list(writer.staged(index)),
                                                  settled["settled"]))
    if unanswered:
        info(f"{writer.llm}: {len(unanswered)} queries left out, the server refusing a prompt "
             f"of each as too long (the manifest's `unanswered`): {unanswered[0]['reason']}")
    path = writer.finish({**manifest, **settled, **({"unanswered": unanswered} if unanswered
                                                    else {}),
                          **served.section(job.llm, writer.llm)})
    return Built(writer.llm, path, read_manifest(path)["stats"], len(unanswered))


def check_build(artifact: str, config: TaskConfig, llms: Sequence[LLMConfig], *,
                out: str | Path = "out", version: str | None = None, stored_only: bool = False
                ) -> tuple[Task, Source, dict]:
    """Every check of a build that needs no model, in the order a user meets them: the task,
    the LLM names, --out, the dataset and corpus, the pools (`check_pools`), the versions to
    write. Loads the source (not its embeddings or any model); (task, source, the task's
    manifest part)."""
    task = load_task(artifact)(config)
    if not task.asks_llm and (llms or config.answer_extractor):
        raise InputError(f"--artifact {task.name} asks no LLM", field_name="llm",
                         hint="leave out --llm and --answer-extractor")
    if task.asks_llm and not llms:
        raise InputError("name at least one LLM", field_name="llm",
                         hint=f"--artifact {task.name} asks one: add --llm MODEL")
    named: dict[str, str | None] = {} if task.asks_llm else {NO_LLM: None}
    for llm in dict.fromkeys(llms):
        if llm.backend not in BACKENDS:
            raise UnknownNameError("backend", llm.backend, sorted(BACKENDS))
        for operation in task.operations:
            check_operation(llm.backend, operation, f"--artifact {task.name}")
        spec = resolve_model(llm.name)  # an unknown name or a missing file fails now
        if llm.backend != "openai":  # a served model's weights are the server's
            check_access(spec)  # so does a gated model whose licence this user has not accepted
        alias = spec.alias
        if alias in named:
            raise InputError(f"--llm {named[alias]!r} and --llm {llm.name!r} are both "
                             f"'{alias}': their artifacts would share one folder",
                             field_name="llm", hint="name each model once")
        named[alias] = llm.name
    for name in [*task.extra_models().values(), config.answer_extractor]:
        if name:
            check_access(resolve_model(name))
    check_writable(out)  # a read-only or full --out fails now, not after the LLM phase
    source = config_source(config, stored_only=stored_only)
    task.check(source)
    answer_extraction.check(source, config.answer_extractor)
    task_manifest = task.manifest(source.kind)  # a kind of query the task cannot label fails here
    check_pools(source, pool=config.pool, k=config.k, run=config.run, encoder=config.encoder,
                index=config.index, bm25=config.bm25())
    folder = dataset_folder(source.name)
    for alias in named:  # an existing --version or a name that cannot be a folder fails now
        artifact_dir(out, kind=type(task), dataset=folder, llm=alias, version=version)
    return task, source, task_manifest


def _identify(executor: Executor, llms: Sequence[LLMConfig], task: Task, cache: str
              ) -> dict[str, tuple[LLMConfig, ModelIdentity]]:
    """alias -> (its config, what names it), each model (and the task's extra models) loaded
    where the executor's workers load it, so that one that cannot load, or cannot answer
    the task's scoring operations, fails now."""
    loaded = {}
    for llm in dict.fromkeys(llms):
        model = executor.call(partial(llm.identify, cache, task.scoring(),
                                      f"--artifact {task.name}"),
                              gpus=llm.gpus, cache_dir=cache)
        loaded[model.alias] = (llm, model)
        for name in task.extra_models().values():
            extra = replace(llm, name=name)
            executor.call(partial(extra.identify, cache), gpus=extra.gpus, cache_dir=cache)
    return loaded


def _build_id(manifest: dict, model_key: dict) -> str:
    """What identifies a build's output, so that only the same build resumes a partial one."""
    text = json.dumps({"tool": __version__, "manifest": manifest, "model": model_key},
                      sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]
