"""Labelling shards of queries on an executor: a `Job` says what to label, a `Labeller` is the
worker that labels its shards.

A job is plain data (task name and config, LLM config, cache folder), so a worker in another
process or on another machine rebuilds the task and loads the models itself, once.

A prompt a served model's server refuses as too long (`PromptRefusedError`: no tokenizer here
counted it first) fails its query alone: the shard is labelled again query by query (what was
answered comes from the call cache, the refused prompt is not sent again) and each query that
fails is left out of the records, with the server's reason (`Labelled.unanswered`).

Ray Data's vLLM stage (`ray.data.llm.build_llm_processor`) does not fit here: it maps a
dataset of independent prompts through an engine, one row in and one row out, while a task's
`label` asks several dependent rounds per shard (utility: closed-book and one-passage
answers, then RAG answers over the passages those made utilitarian; SEER: samples, then the
experts' scores of them; rubric: questions, then P(yes) per document and question). Each
round's prompts exist only once the last round's answers do, and go through the task base's
dedup and the call cache with the backends' own rendering and per-row seeds; a Ray Data
pipeline would bypass both and answer differently from a local build. Each worker holds one
vllm engine instead, which batches every round's requests continuously.
"""

from __future__ import annotations

import gc
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from labeler.errors import PromptRefusedError
from labeler.executors.base import Executor
from labeler.llm.base import Backend
from labeler.llm.cache import CachedBackend
from labeler.llm.calls import Calls
from labeler.llm.config import LLMConfig
from labeler.tasks import load_task
from labeler.tasks.base import NO_LLM, Shard, Task, TaskConfig
from labeler.turns import wait_turn
from labeler.workflows.served_usage import ServedTally, worker_mark, worker_usage


@dataclass(frozen=True)
class Job:
    """Label shards of one task with one LLM (None: the task asks none)."""

    task: str  # artifact kind, a key of TASKS
    config: TaskConfig
    llm: LLMConfig | None
    cache_dir: str | None = None  # the call cache folder, absolute (None: the default)

    def make_task(self) -> Task:
        return load_task(self.task)(self.config)

    def load_model(self) -> Backend | None:
        return None if self.llm is None else self.llm.load(self.cache_dir)

    def load_extra_models(self, task: Task) -> dict[str, Backend]:
        """The task's `extra_models` by role, loaded with this job's backend settings."""
        return {} if self.llm is None else {
            role: replace(self.llm, name=name).load(self.cache_dir)
            for role, name in task.extra_models().items()}


@dataclass(frozen=True)
class Labelled:
    """One labelled shard: its index, its records, the queries left out because the
    server refused one of their prompts as too long ({qid, reason} each), and what its
    worker has asked a served model so far (`worker_usage`)."""

    index: int
    records: list[dict]
    unanswered: list[dict]
    usage: dict | None = None


class Labeller:
    """A job's worker: its task and models, loaded on the first shard and kept; a shard in,
    a `Labelled` out. Shards labelled at once (`LABELLED_AHEAD`) take turns on
    the engine: a cached model's calls prepare their requests first (`CachedBackend`), an
    uncached model's shard waits for its turn before its first call."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self._loaded: tuple[Task, Backend, dict[str, Backend]] | None = None
        self._served: tuple[str, dict | None] = ("", None)  # this worker, its usage mark

    def __call__(self, shard: Shard) -> Labelled:
        with _LOADING:  # here, not when built: Ray loses an actor constructor's error
            if self._loaded is None:
                task = self.job.make_task()
                self._loaded = task, self.job.load_model(), self.job.load_extra_models(task)
                self._served = uuid.uuid4().hex, worker_mark(self.job.llm, self._loaded[1])
        task, model, models = self._loaded
        labelled = self._label(task, model, models, shard)
        return replace(labelled, usage=worker_usage(self._served[0], model, self._served[1]))

    def _label(self, task: Task, model: Backend | None, models: dict[str, Backend],
               shard: Shard) -> Labelled:
        """The shard labelled."""
        if model is not None and not all(isinstance(m, CachedBackend)
                                         for m in (model, *models.values())):
            wait_turn()
        gc.freeze()  # what lives now (modules, models, pools) is not scanned by the collections
        try:  # labelling sets off (~10% of bench_overhead's CPU when it was)
            route = self.job.llm.router(self.job.cache_dir) if self.job.llm else None
            calls = task.calls(model, models, route)
            try:
                return Labelled(shard.index, task.label(calls, shard), [])
            except PromptRefusedError:
                return _label_apart(task, calls, shard)
        finally:  # collected again from here: a cycle dropped later is not kept for good
            gc.unfreeze()


def _label_apart(task: Task, calls: dict[str, Calls], shard: Shard) -> Labelled:
    """`shard` labelled query by query, each query a prompt of which the server refused as
    too long left out with its reason."""
    records, unanswered = [], []
    for query in shard.queries:
        alone = replace(shard, queries=(query,), pools={query.qid: shard.pools[query.qid]})
        try:
            records += task.label(calls, alone)
        except PromptRefusedError as refused:
            unanswered.append({"qid": query.qid, "reason": str(refused)})
    return Labelled(shard.index, records, unanswered)


#: shards a worker starts labelling while one is on its engine (their requests prepared)
LABELLED_AHEAD = 1
#: one worker loads its models once, whichever of its shards comes first
_LOADING = threading.Lock()


def label_shards(executor: Executor, job: Job, shards: Sequence[Shard], served: ServedTally
                 ) -> Iterator[tuple[Shard, Labelled]]:
    """(shard, its `Labelled`) for every shard, labelled by `executor`'s workers, in any
    order; what each worker reports it asked a served model goes to `served`."""
    by_index = {shard.index: shard for shard in shards}
    for labelled in executor.map(Labeller(job), shards, gpus=job.llm.gpus if job.llm else 0,
                                 what=f"{job.task} shards for "
                                      f"{job.llm.name if job.llm else NO_LLM}",
                                 cache_dir=job.cache_dir, ahead=LABELLED_AHEAD):
        served.add(labelled.usage)
        yield by_index[labelled.index], labelled
