"""The executor interface: a `Job` says what to run on a shard; an `Executor` runs it.

A job is plain data (task name and config, LLM config, cache folder), so a worker on another
machine can rebuild the task and load the model itself, once per worker (datatrove's ranks).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from labeler.llm.base import Backend
from labeler.llm.config import LLMConfig
from labeler.tasks import load_task
from labeler.tasks.base import Shard, Task, TaskConfig


@dataclass(frozen=True)
class Job:
    """Label shards of one task with one LLM."""

    task: str  # artifact kind, a key of TASKS
    config: TaskConfig
    llm: LLMConfig
    cache_dir: str | None = None  # the call cache folder (None: the default)

    def make_task(self) -> Task:
        return load_task(self.task)(self.config)

    def load_model(self) -> Backend:
        return self.llm.load(self.cache_dir)

    def load_extra_models(self, task: Task) -> dict[str, Backend]:
        """The task's `extra_models` by role, loaded with this job's backend settings."""
        return {role: replace(self.llm, name=name).load(self.cache_dir)
                for role, name in task.extra_models().items()}


class Executor(ABC):
    """Runs a job's shards and yields each shard's records as soon as it is done."""

    @abstractmethod
    def run(self, job: Job, shards: Sequence[Shard]) -> Iterator[tuple[Shard, list[dict]]]:
        """(shard, its records) per shard, in any order; every shard exactly once."""
