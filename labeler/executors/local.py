"""The local executor: shards one after another in this process, under one progress bar."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from labeler.executors.base import Executor, Job
from labeler.progress import track
from labeler.tasks.base import Shard


class LocalExecutor(Executor):
    """Loads the model once (load_backend keeps it for the process) and labels in order."""

    def run(self, job: Job, shards: Sequence[Shard]) -> Iterator[tuple[Shard, list[dict]]]:
        if not shards:
            return
        task, model = job.make_task(), job.load_model()
        models = job.load_extra_models(task)
        for shard in track(shards, f"{job.task} shards for {model.alias}"):
            yield shard, task.label(task.calls(model, models), shard)
