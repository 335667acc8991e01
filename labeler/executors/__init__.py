"""Executors: run a task's `label` over shards of queries, here or on a cluster.

`EXECUTORS` maps a name to "module:class", imported only when used (Ray stays optional).
"""

from __future__ import annotations

import importlib

from labeler.errors import UnknownNameError
from labeler.executors.base import Executor, Job

EXECUTORS = {"local": "labeler.executors.local:LocalExecutor"}


def load_executor(name: str = "local", **options) -> Executor:
    """The executor `name`, built with `options`."""
    if name not in EXECUTORS:
        raise UnknownNameError("executor", name, sorted(EXECUTORS))
    module, attr = EXECUTORS[name].split(":")
    return getattr(importlib.import_module(module), attr)(**options)


__all__ = ["EXECUTORS", "Executor", "Job", "load_executor"]
