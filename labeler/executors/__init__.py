"""Executors: map a worker over items, here or on a cluster.

`EXECUTORS` maps a name to "module:class", imported only when used (Ray stays optional).
"""

from __future__ import annotations

import inspect

from labeler.errors import InputError, UnknownNameError
from labeler.executors.base import Executor
from labeler.lazy import load_entry

EXECUTORS = {"local": "labeler.executors.local:LocalExecutor",
             "ray": "labeler.executors.ray:RayExecutor"}


def load_executor(name: str = "local", **options) -> Executor:
    """The executor `name`, built with `options`; an option set (not None) that it does not
    take is an InputError."""
    if name not in EXECUTORS:
        raise UnknownNameError("executor", name, sorted(EXECUTORS))
    cls = load_entry(EXECUTORS[name])
    given = {key: value for key, value in options.items() if value is not None}
    for key in given.keys() - inspect.signature(cls).parameters.keys():
        raise InputError(f"does not apply to the {name} executor", field_name=key,
                         hint="use --executor ray")
    return cls(**given)


__all__ = ["EXECUTORS", "load_executor"]
