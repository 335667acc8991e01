"""Executors: map a worker over items, here or on a cluster.

`EXECUTORS` maps a name to its class, imported only when used (Ray stays optional); an
installed package adds its own under the entry-point group `labeler.executors`.
"""

from __future__ import annotations

import inspect

from labeler.errors import InputError
from labeler.executors.base import Executor
from labeler.lazy import Registry

EXECUTORS = Registry("executor", {"local": "labeler.executors.local:LocalExecutor",
                                  "ray": "labeler.executors.ray:RayExecutor"},
                     group="labeler.executors", base="labeler.executors.base:Executor")


def load_executor(name: str = "local", **options) -> Executor:
    """The executor `name`, built with `options`; an option set (not None) that it does not
    take is an InputError."""
    cls = EXECUTORS[name]
    given = {key: value for key, value in options.items() if value is not None}
    for key in given.keys() - inspect.signature(cls).parameters.keys():
        raise InputError(f"does not apply to the {name} executor", field_name=key,
                         hint="use --executor ray")
    return cls(**given)


__all__ = ["EXECUTORS", "load_executor"]
