"""The executor interface: a `Job` says what to run on a shard; an `Executor` runs it.

A job is plain data (task name and config, LLM config, cache folder), so a worker on another
machine can rebuild the task and load the model itself, once per worker (datatrove's ranks).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from labeler.llm.base import Backend
from labeler.llm.config import LLMConfig
from labeler.progress import progress_bar
from labeler.tasks import load_task
from labeler.tasks.base import Shard, Task, TaskConfig

if TYPE_CHECKING:
    import numpy as np

    from labeler.retrieval.dense import Encoder
    from labeler.retrieval.index import EmbeddingIndex


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


@dataclass(frozen=True)
class ModelIdentity:
    """What names a model in a build: its folder, the manifest's revision, the build id's key."""

    alias: str
    revision: str
    key: dict

    @classmethod
    def of(cls, model: Backend) -> ModelIdentity:
        return cls(model.alias, model.revision, model.key())


class Executor(ABC):
    """Runs a job's shards and yields each shard's records as soon as it is done; encodes a
    corpus's missing embedding shards."""

    def identify(self, llm: LLMConfig, cache_dir: str | None) -> ModelIdentity:
        """Load `llm` where this executor's workers would, so that a model that cannot load
        fails before any work, and say what names it. Here: in this process, which keeps it
        loaded for the shards."""
        return ModelIdentity.of(llm.load(cache_dir))

    def encode(self, index: EmbeddingIndex, shards: Sequence[int],
               texts: Callable[[range], list[str]], encoder: Encoder
               ) -> Iterator[tuple[int, np.ndarray]]:
        """(shard, its vectors) for each of `shards` of `index`, in any order, each shard's
        passages `texts(index.span(shard))` embedded by `encoder`; the caller writes them.
        Here: one after another with the loaded `encoder`, under one progress bar."""
        with progress_bar("encoding corpus", sum(len(index.span(s)) for s in shards)) as advance:
            for shard in shards:
                yield shard, encoder.embed(texts(index.span(shard)), advance)

    @abstractmethod
    def run(self, job: Job, shards: Sequence[Shard]) -> Iterator[tuple[Shard, list[dict]]]:
        """(shard, its records) per shard, in any order; every shard exactly once."""
