"""make test's pytest-xdist scheduling (`-n 2 --dist loadgroup`, tests/conftest.py picks it): a
file's tests on one worker, so that its module fixtures are built once, and the files of a
ONE_WORKER folder on one worker together, one after another.

By node id, not by `xdist_group` marks: pytest-xdist 3.8 reads the marks into the node ids it
rewrites on the worker, which pytest 9.2 ignores (pytest-dev/pytest-xdist#1386), and the tests
were spread one by one over both workers.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

#: each executors file starts a Ray head of 2 CPUs: two at once oversubscribe CI's 2 cores and
#: share Ray's fixed default ports
ONE_WORKER = ("tests/executors/",)


def group(nodeid: str) -> str:
    """The worker group of the test `nodeid`: its ONE_WORKER folder, else its file."""
    path = nodeid.split("::")[0]
    return next((folder for folder in ONE_WORKER if path.startswith(folder)), path)


class FileGroups(LoadScopeScheduling):
    """xdist's scope scheduling (a scope to one worker), each `group` a scope."""

    def _split_scope(self, nodeid: str) -> str:
        return group(nodeid)
