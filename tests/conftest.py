"""Shared fixtures: no network, user folders in a temp dir, the bundled LLM loaded once."""

from __future__ import annotations

import os
import tempfile

import pytest

# huggingface_hub and datasets read these once, at import: set them before any test imports them
# so no test writes to the user's real caches or reaches the network.
_HOME = tempfile.mkdtemp(prefix="labeler-tests-")
#: the session's cache root: the bundled model is converted into its models/ once
SESSION_CACHE = os.path.join(_HOME, "labeler-cache")
os.environ.update(
    HF_HOME=os.path.join(_HOME, "hf-home"),
    HF_HUB_OFFLINE="1",
    HF_DATASETS_OFFLINE="1",
    TRANSFORMERS_OFFLINE="1",
    # session-wide cache root (the converted bundled model lands here once); tests override
    # it per test with their own temp folder
    LABELER_CACHE_DIR=SESSION_CACHE,
)
# torch's OpenMP threads spin while idle by default; on 2 shared cores that starves the
# other test processes (the kill-and-rerun subprocesses): a batch-8 decode step went from
# ~4.4 s to ~0.15 s under load with PASSIVE.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: fixtures that load the bundled LLM: every test that uses one, directly or through another
#: fixture, is marked `slow` (a test that loads it otherwise, e.g. through the CLI, says so itself)
LLM_FIXTURES = frozenset({"smollm", "smollm_vllm", "loads", "nq2_build"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if LLM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


_LOADS_BEFORE = pytest.StashKey[int]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    item.stash[_LOADS_BEFORE] = _bundled_loads()  # before its fixtures, session ones too
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Fail a test that loads the bundled LLM in this process without the `slow` marker, so
    that `pytest -m "not slow"` stays the fast loop."""
    result = yield
    if item.get_closest_marker("slow") is None and _bundled_loads() > item.stash[_LOADS_BEFORE]:
        _forget_bundled()  # so that the next such test is caught too
        pytest.fail("this test loads the bundled LLM: mark it slow (@pytest.mark.slow)")
    return result


def _bundled_loads() -> int:
    """How many backends of the bundled LLM this process holds loaded (labeler.llm's cache)."""
    return len(_bundled_keys())


def _forget_bundled() -> None:
    import labeler.llm

    for key in _bundled_keys():
        del labeler.llm._LOADED[key]


def _bundled_keys() -> list[tuple]:
    """The keys of labeler.llm's cache of loaded backends that hold the bundled LLM."""
    import sys

    llm = sys.modules.get("labeler.llm")
    if llm is None:
        return []
    from labeler.llm.models import resolve_model

    bundled = resolve_model("smollm2-135m").model_id
    return [key for key in llm._LOADED if key[1] == bundled]
