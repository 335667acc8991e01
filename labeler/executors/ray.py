"""The Ray executor: a build's shards on a pool of Ray actors, one loaded model per actor.

Each actor rebuilds the task from the plain `Job` and loads the model (and the task's extra
models) on its first shard, then labels every shard sent to it through the same call cache
(`job.cache_dir`, which every node must see). The driver hands shards to idle actors
(`ray.util.ActorPool`) and yields each shard's records as it finishes, so the build's own
writer writes them: the data files are those of a local build, and a killed build resumes
at its unwritten shards. An error raised in an actor reaches the driver as itself (a
labeler error stays one line); an actor that dies is a `WorkerError`. A corpus's missing
embedding shards go the same way (`encode`): each actor loads the encoder once, and the
driver writes each shard's returned vectors, so embeddings need no shared storage.

Resources per actor: the hf backend on the CPU takes one CPU (Ray sets OMP_NUM_THREADS, so
torch runs one thread), on CUDA one GPU; the vllm backend takes `tensor_parallel` GPUs.

Ray Data's vLLM stage (`ray.data.llm.build_llm_processor`) does not fit this seam: it maps a
dataset of independent prompts through an engine, one row in and one row out, while a task's
`label` asks several dependent rounds per shard (utility: closed-book and one-passage
answers, then RAG answers over the passages those made utilitarian; SEER: samples, then the
experts' scores of them; rubric: questions, then P(yes) per document and question). Each
round's prompts exist only once the last round's answers do, and go through the task base's
dedup and the call cache with the backends' own rendering and per-row seeds; a Ray Data
pipeline would bypass both and answer differently from a local build. Here each actor holds
one vllm engine instead, which batches every round's requests continuously.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from labeler import settings
from labeler.errors import InputError, MissingDependencyError, WorkerError, first_line
from labeler.executors.base import Executor, Job, ModelIdentity
from labeler.llm.config import LLMConfig
from labeler.paths import cache_root
from labeler.progress import info, progress_bar
from labeler.retrieval.dense import load_encoder
from labeler.tasks.base import Shard

if TYPE_CHECKING:
    from labeler.retrieval.dense import Encoder
    from labeler.retrieval.index import EmbeddingIndex

try:
    import ray
    from ray.util import ActorPool
except ImportError as exc:
    raise MissingDependencyError("the Ray executor", "labeler[ray]",
                                 hint="from a checkout: pip install -e '.[ray]'") from exc


class RayExecutor(Executor):
    """Shards on `workers` Ray actors, on the cluster at `address` (None: Ray started here)."""

    def __init__(self, *, address: str | None = None, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise InputError(f"workers must be at least 1, got {workers}", field_name="workers")
        self.address = address  # e.g. ray://head:10001 or head:6379; None: a new local Ray
        self.workers = workers  # actors; None: as many as the cluster has room for
        if address is not None:  # now, before any work (ray.init retries a dead one for ever)
            self._fail_unless(_reachable, address)

    def run(self, job: Job, shards: Sequence[Shard]) -> Iterator[tuple[Shard, list[dict]]]:
        if not shards:
            return
        # workers on other nodes or in other folders see the same cache by its absolute path
        job = replace(job, cache_dir=str(cache_root(job.cache_dir).resolve()))
        by_index = {shard.index: shard for shard in shards}
        with self._pool(_Labeller, (job,), _resources(job.llm), len(shards),
                        job.cache_dir) as (pool, count):
            info(f"{job.task}: {len(shards)} shards on {count} Ray workers")
            with progress_bar(f"{job.task} shards for {job.llm.name} on Ray", len(shards)) \
                    as advance:
                for index, records in _unordered(pool, lambda a, s: a.label.remote(s), shards):
                    yield by_index[index], records
                    advance(1)

    def encode(self, index: EmbeddingIndex, shards: Sequence[int],
               texts: Callable[[range], list[str]], encoder: Encoder
               ) -> Iterator[tuple[int, np.ndarray]]:
        """Each shard's texts go to an actor that loads the encoder once by its name on the
        driver's kind of device; its vectors come back to the driver, which writes them, so
        the workers need no shared storage for embeddings."""
        if not shards:
            return
        device = "cuda:0" if encoder.device.startswith("cuda") else "cpu"  # Ray's GPU for it
        with self._pool(_Encoding, (encoder.name, device, encoder.key), _on(device),
                        len(shards), None) as (pool, count):
            info(f"encoding: {len(shards)} corpus shards on {count} Ray workers")
            with progress_bar("encoding corpus on Ray",
                              sum(len(index.span(s)) for s in shards)) as advance:
                for shard, vectors in _unordered(
                        pool, lambda a, s: a.embed.remote(s, texts(index.span(s))), shards):
                    yield shard, vectors
                    advance(len(vectors))

    def identify(self, llm: LLMConfig, cache_dir: str | None) -> ModelIdentity:
        """On a cluster, or for a model whose actors hold GPUs, the model is loaded once on
        a worker, whose process then ends: the driver may have neither the GPUs nor the
        model's files (a head node), and on one node its engine would take the GPU memory
        the actors need. A CPU model with Ray started here loads here, as locally."""
        resources = _resources(llm)
        if self.address is None and not resources.get("num_gpus"):
            return super().identify(llm, cache_dir)
        cache_dir = str(cache_root(cache_dir).resolve())
        started = self._connect()
        try:
            task = _identify.options(**resources,
                                     runtime_env={"env_vars": _worker_env(cache_dir)})
            with _worker_errors():
                return ray.get(task.remote(llm, cache_dir))
        finally:
            if started:
                ray.shutdown()

    def _connect(self) -> bool:
        """Connect this process to Ray (a new local Ray without an address); True when this
        call connected it, so that `run` disconnects it at the end."""
        if ray.is_initialized():
            return False
        quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
        if self.address is None:  # "local": a new Ray here, never one found running
            ray.init(address="local", num_cpus=self.workers or os.cpu_count(), **quiet)
            return True
        self._fail_unless(ray.init, address=self.address, **quiet)
        return True

    @contextmanager
    def _pool(self, actor_class, args: tuple, resources: dict, work: int,
              cache_dir: str | None) -> Iterator[tuple[ActorPool, int]]:
        """A pool of actors `actor_class(*args)` holding `resources` each, as many as
        `--workers` or the cluster's room, at most `work`, and how many. Every actor is
        killed at the end, also when the caller stops early."""
        started, actors = self._connect(), []
        try:
            count = min(work, self.workers or _room(resources))
            env = {"env_vars": _worker_env(cache_dir)}
            actor = actor_class.options(**resources, runtime_env=env)
            actors = [actor.remote(*args) for _ in range(count)]
            yield ActorPool(actors), count
        finally:
            for worker in actors:
                ray.kill(worker)
            if started:
                ray.shutdown()

    def _fail_unless(self, connect, *args, **kwargs) -> None:
        """`connect(...)`, its failure to reach the cluster one InputError line."""
        try:
            connect(*args, **kwargs)
        except (OSError, RuntimeError, ValueError) as error:  # ConnectionError is an OSError
            raise InputError(f"cannot connect to the Ray cluster at {self.address}: "
                             f"{first_line(error)}", field_name="address",
                             hint="start it with `ray start --head`, or leave out "
                                  "--ray-address to start Ray here") from None


@ray.remote
class _Labeller:
    """One worker: the job's task and models, loaded on the first shard and kept."""

    def __init__(self, job: Job) -> None:
        self.job, self.loaded = job, None

    def label(self, shard: Shard) -> tuple[int, list[dict]]:
        if self.loaded is None:  # here, not in __init__: Ray loses a failed __init__'s error
            task = self.job.make_task()
            self.loaded = task, self.job.load_model(), self.job.load_extra_models(task)
        task, model, models = self.loaded
        return shard.index, task.label(task.calls(model, models), shard)


@ray.remote
class _Encoding:
    """One worker: the corpus encoder, loaded by name on the first shard and kept."""

    def __init__(self, name: str, device: str, key: str) -> None:
        self.spec, self.encoder = (name, device, key), None

    def embed(self, shard: int, texts: list[str]) -> tuple[int, np.ndarray]:
        name, device, key = self.spec
        if self.encoder is None:  # as _Labeller: an error here reaches the driver
            self.encoder = load_encoder(name, device=device)
            if self.encoder.key != key:  # another model under the same name on this node
                raise InputError(f"encoder '{name}' loads as {self.encoder.key} on a Ray "
                                 f"worker, as {key} here", field_name="encoder",
                                 hint="install the same model on every node")
        return shard, self.encoder.embed(texts)


@ray.remote(max_calls=1)  # the worker process ends after it: its GPU memory is freed
def _identify(llm: LLMConfig, cache_dir: str) -> ModelIdentity:
    return ModelIdentity.of(llm.load(cache_dir))


@contextmanager
def _worker_errors() -> Iterator[None]:
    """The error a worker raised, as itself (a labeler error stays one line); a worker that
    died, a WorkerError."""
    try:
        yield
    except ray.exceptions.RayTaskError as error:
        raise error.cause from None
    except ray.exceptions.RayActorError as error:
        raise WorkerError(first_line(error)) from None


def _unordered(pool: ActorPool, submit, items: Sequence) -> Iterator:
    """`submit(actor, item)`'s results for every item, as each finishes."""
    for item in items:
        pool.submit(submit, item)
    while pool.has_next():
        with _worker_errors():
            result = pool.get_next_unordered()
        yield result


def _resources(llm: LLMConfig) -> dict:
    """What one actor holds: GPUs for vllm (its tensor-parallel size), else as `_on` its
    device."""
    if llm.backend == "vllm":
        return {"num_cpus": 1, "num_gpus": llm.tensor_parallel}
    return _on(llm.device or "cpu")


def _on(device: str) -> dict:
    """What an actor computing on `device` holds: one GPU for CUDA, else one CPU."""
    return {"num_cpus": 1, "num_gpus": 1} if device.startswith("cuda") else {"num_cpus": 1}


def _room(resources: dict) -> int:
    """How many actors of `resources` the cluster holds at once (at least one)."""
    total = ray.cluster_resources()
    fits = [int(total.get(name.removeprefix("num_").upper(), 0) // amount)
            for name, amount in resources.items() if amount]
    return max(1, min(fits))


def _reachable(address: str) -> None:
    """OSError unless something listens at HOST:PORT (a `ray://` client address too); "auto"
    (the cluster this machine joined) is left to Ray."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if address != "auto":
        if not port.isdigit():
            raise ValueError("not HOST:PORT, e.g. head:6379")
        socket.create_connection((host, int(port)), timeout=10).close()


def _worker_env(cache_dir: str | None) -> dict[str, str]:
    """The environment a worker needs to behave as this process: its cache folder (None:
    a worker that writes none), the offline switches and the global flags."""
    if cache_dir is None:
        return settings.passed_to_workers()
    return {**settings.passed_to_workers(), settings.CACHE_DIR: cache_dir}
