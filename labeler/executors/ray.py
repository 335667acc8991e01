"""The Ray executor: a worker on each of a pool of Ray actors, which keeps what it loads.

The driver hands items to idle actors (`ray.util.ActorPool`), reading each only then, and
yields each result as it finishes, so the caller writes it: a killed run resumes at what it
had not written. An error raised in an actor reaches the driver as itself (a labeler error
stays one line); an actor that dies is a `WorkerError`. Every actor holds one CPU and the
GPUs asked for (Ray sets OMP_NUM_THREADS, so torch on the CPU runs one thread) and sees this
process's settings and call cache.

The call cache is one SQLite file, which must not be shared over a network filesystem: a
keeper actor on the driver's node is the only process that opens it, and every worker asks
and commits its calls through the keeper (`serve_calls_from`), a chunk at a time, so a worker
on any node sees every answer already computed and a killed build loses only those in flight.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from labeler import settings
from labeler.errors import InputError, MissingDependencyError, WorkerError, first_line
from labeler.executors.base import Executor, R, T
from labeler.llm.call_store import CallStore, serve_calls_from
from labeler.paths import cache_root
from labeler.progress import info, progress_bar
from labeler.turns import Turns

try:
    import ray
    from ray.util import ActorPool
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as exc:
    raise MissingDependencyError("the Ray executor", "labeler[ray]",
                                 hint="from a checkout: pip install -e '.[ray]'") from exc


class RayExecutor(Executor):
    """Workers on `workers` Ray actors, on the cluster at `address` (None: Ray started here)."""

    in_process = False

    def __init__(self, *, address: str | None = None, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise InputError(f"workers must be at least 1, got {workers}", field_name="workers")
        self.address = address  # e.g. ray://head:10001 or head:6379; None: a new local Ray
        self.workers = workers  # actors; None: as many as the cluster has room for
        if address is not None:  # now, before any work (ray.init retries a dead one for ever)
            self._fail_unless(_reachable, address)

    def map(self, worker: Callable[[T], R], items: Sequence[T], *, what: str, gpus: int = 0,
            total: int | None = None, size: Callable[[R], int] = lambda result: 1,
            cache_dir: str | None = None, ahead: int = 0) -> Iterator[R]:
        if not items:
            return
        with self._pool(worker, _resources(gpus), len(items), cache_dir, ahead) \
                as (pool, count):
            info(f"{len(items)} {what} on {count} Ray workers")
            with progress_bar(f"{what} on Ray", len(items) if total is None else total) \
                    as advance:
                for position in range(len(items)):  # each item read when an actor is free
                    pool.submit(lambda actor, at: actor.run.remote(items[at]), position)
                while pool.has_next():
                    with _worker_errors():
                        result = pool.get_next_unordered()
                    yield result
                    advance(size(result))

    def worker_count(self, gpus: int = 0) -> int:
        """`--workers`, else as many as the cluster has room for (as `map` starts)."""
        if self.workers:
            return self.workers
        started = self._connect()
        try:
            return _room(_resources(gpus))
        finally:
            if started:
                ray.shutdown()

    def call(self, fn: Callable[[], R], *, gpus: int = 0, cache_dir: str | None = None) -> R:
        """On a cluster, or holding GPUs, `fn` runs in a worker whose process then ends: the
        driver may have neither the GPUs nor the model's files (a head node), and on one node
        a model loaded here would take the GPU memory the actors need. Without either, with
        Ray started here, it runs here."""
        if self.address is None and not gpus:
            return fn()
        started, store = self._connect(), None
        try:
            task = _called.options(**_resources(gpus),
                                   runtime_env={"env_vars": _worker_env(cache_dir)})
            store = _kept(cache_dir)
            with _worker_errors():
                return ray.get(task.remote(fn, store))
        finally:
            if store is not None:
                ray.kill(store.keeper)
            if started:
                ray.shutdown()

    def _connect(self) -> bool:
        """Connect this process to Ray (a new local Ray without an address); True when this
        call connected it, so that its caller disconnects it at the end."""
        if ray.is_initialized():
            return False
        quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
        if self.address is None:  # "local": a new Ray here, never one found running
            ray.init(address="local", num_cpus=self.workers or os.cpu_count(), **quiet)
            return True
        self._fail_unless(ray.init, address=self.address, **quiet)
        return True

    @contextmanager
    def _pool(self, worker: Callable, resources: dict, work: int, cache_dir: str | None,
              ahead: int = 0) -> Iterator[tuple[ActorPool, int]]:
        """A pool of actors each holding `worker` and `resources`, as many as `--workers` or
        the cluster's room, at most `work`, and how many; each actor is in the pool `1 +
        ahead` times and runs that many items at once, in threads taking turns. Every actor
        is killed at the end, also when the caller stops early."""
        started, actors = self._connect(), []
        try:
            count = min(work, self.workers or _room(resources))
            env = {"env_vars": _worker_env(cache_dir)}
            holder = _Actor.options(**resources, runtime_env=env, max_concurrency=1 + ahead)
            store = _kept(cache_dir)
            actors = [] if store is None else [store.keeper]  # killed at the end with them
            actors += [holder.remote(worker, store) for _ in range(count)]
            yield ActorPool(actors[-count:] * (1 + ahead)), count
        finally:
            for actor in actors:
                ray.kill(actor)
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
class _Actor:
    """One Ray worker process: its copy of the worker, which keeps what it loads, and asks
    the driver's call cache through `store` (None: no cache); the items it runs at once take
    turns on the engine in the order they came."""

    def __init__(self, worker: Callable, store: _KeptStore | None) -> None:
        self.worker = worker
        self.turns = Turns()
        if store is not None:
            serve_calls_from(store)

    def run(self, item):
        return self.turns.run(self.turns.take(), self.worker, item)


@ray.remote(max_calls=1)  # the worker process ends after it: its GPU memory is freed
def _called(fn: Callable, store: _KeptStore | None):
    if store is not None:
        serve_calls_from(store)
    return fn()


@ray.remote(num_cpus=0)
class _Keeper:
    """The call cache of the driver's folder, on the driver's node: the one process that
    opens its SQLite file while workers run."""

    def __init__(self, cache_dir: str) -> None:
        self.store = CallStore(cache_dir)

    def lookup(self, keys: list[str]) -> dict:
        return self.store.lookup(keys)

    def commit(self, op: str, model: str, answers: list[tuple[str, object]]) -> None:
        self.store.commit(op, model, answers)

    def count_hits(self, hits: int) -> None:
        self.store.count_hits(hits)


class _KeptStore:
    """A worker's call store: CallStore's methods, each answered by the driver's keeper."""

    def __init__(self, keeper) -> None:
        self.keeper = keeper

    def lookup(self, keys: list[str]) -> dict:
        return _answer(self.keeper.lookup.remote(keys))

    def commit(self, op: str, model: str, answers: list[tuple[str, object]]) -> None:
        _answer(self.keeper.commit.remote(op, model, answers))  # committed before going on

    def count_hits(self, hits: int) -> None:
        if hits:
            _answer(self.keeper.count_hits.remote(hits))


def _answer(reference):
    """The keeper's answer; its error (a CacheError) as itself."""
    try:
        return ray.get(reference)
    except ray.exceptions.RayTaskError as error:
        raise error.cause from None


def _kept(cache_dir: str | None) -> _KeptStore | None:
    """A keeper of the call cache `cache_dir` on this (the driver's) node, for workers to
    share (None: no cache)."""
    if cache_dir is None:
        return None
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    keeper = _Keeper.options(scheduling_strategy=here,
                             runtime_env={"env_vars": _worker_env(cache_dir)}).remote(
        str(cache_root(cache_dir).resolve()))
    return _KeptStore(keeper)


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


def _resources(gpus: int) -> dict:
    """What one actor holds: one CPU, and `gpus` GPUs where it asks for any."""
    return {"num_cpus": 1, "num_gpus": gpus} if gpus else {"num_cpus": 1}


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
    """The environment a worker needs to behave as this process: its cache folder by its
    absolute path, where it finds the models it loads (None: a worker that writes none;
    its calls go through the keeper), the offline switches and the global flags."""
    if cache_dir is None:
        return settings.passed_to_workers()
    return {**settings.passed_to_workers(),
            settings.CACHE_DIR: str(cache_root(cache_dir).resolve())}
