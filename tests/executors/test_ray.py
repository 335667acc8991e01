"""The Ray executor against a real local Ray cluster (2 CPUs, started here) and the real
bundled SmolLM2: the same bytes as a local build, resumption after a killed driver, a worker's
error as the same one line, and the error without ray installed. The workers never open the
call cache's SQLite file: they ask the driver's keeper (labeler.executors.ray).

The builds label nq-sample's first 4 queries with their human gold passage (--pool hgp: no
retrieval), one query per shard, so 4 shards go to 2 workers that each load the model once.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.processes import kill_when

from labeler.cli import cli
from labeler.errors import InputError, MissingDependencyError, PromptTooLongError
from labeler.llm.call_store import cache_stats
from labeler.workflows.validate import validate_path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
ARGS = ("--dataset", "nq-sample", "--llm", "smollm2-135m", "--limit", 4, "--pool", "hgp",
        "--shard-size", 1, "--max-new-tokens", 24, "--with-likelihood")
FOLDER = Path("utility", "nq-sample", "smollm2-135m")


def _build(out: Path, *args) -> object:
    return CliRunner().invoke(cli, ["build", "--out", str(out), *map(str, args)])


def _data(folder: Path) -> bytes:
    """A version's data: its data files' bytes in file-name order."""
    return b"".join(p.read_bytes() for p in sorted(folder.glob("data-*.jsonl")))


def _cache(folder: Path, session_cache: str) -> Path:
    """An empty call cache that shares the session's converted SmolLM2 (models/)."""
    folder.mkdir(parents=True)
    (folder / "models").symlink_to(Path(session_cache) / "models")
    return folder


@pytest.fixture(scope="module")
def local_build(smollm, session_cache, tmp_path_factory) -> tuple[Path, int]:
    """The local build of ARGS with its own cache: its version folder and calls computed."""
    out = tmp_path_factory.mktemp("local")
    calls = _cache(out / "calls", session_cache)
    result = _build(out / "out", *ARGS, "--cache-dir", calls)
    assert result.exit_code == 0, result.output
    return out / "out" / FOLDER / "v1", cache_stats(calls).misses


def test_a_ray_build_writes_the_bytes_of_a_local_build(tmp_path, ray_cluster, local_build,
                                                       session_cache, loads):
    """On a cluster the driver never loads the model: a worker says what names it."""
    local, computed = local_build
    calls = _cache(tmp_path / "calls", session_cache)
    result = _build(tmp_path / "out", *ARGS, "--cache-dir", calls, "--executor", "ray",
                    "--ray-address", ray_cluster, "--workers", 2)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / FOLDER / "v1"
    assert len(list(folder.glob("data-*.jsonl"))) == 4
    assert _data(folder) == _data(local)
    assert validate_path(folder) == []
    assert cache_stats(calls).misses == computed  # the workers asked every call themselves
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["llm_config"]["tensor_parallel"] == 1
    assert loads == []  # `loads` sees every model this process loads
    assert manifest["model_revision"] == json.loads(
        (local / "manifest.json").read_text())["model_revision"]


def test_a_killed_ray_build_resumes_at_its_unwritten_shards(tmp_path, ray_cluster, local_build,
                                                            session_cache):
    """SIGKILL to the driver once a shard is written (its workers die with it); the rerun on
    the same cluster labels only the shards not written, asks no call twice (the workers
    commit through the driver's keeper, chunk by chunk) and ends with the local bytes."""
    calls = _cache(tmp_path / "calls", session_cache)
    out = tmp_path / "out"
    args = [*map(str, ARGS), "--cache-dir", str(calls), "--out", str(out), "--executor", "ray",
            "--ray-address", ray_cluster, "--workers", "2"]
    kill_when([sys.executable, "-m", "labeler", "build", *args],
              lambda: any((out / FOLDER).glob(".v1.*.partial/data-*.jsonl")), "the build")
    [partial] = (out / FOLDER).glob(".v1.*.partial")
    written = len(list(partial.glob("data-*.jsonl")))
    assert 1 <= written < 4
    assert not (out / FOLDER / "v1").exists()

    rerun = subprocess.run([sys.executable, "-m", "labeler", "build", *args],
                           capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stderr
    said = " ".join(rerun.stderr.split())  # rich wraps lines at the terminal width
    assert f"resuming {partial.name}, {written} of 4 shards already written" in said
    assert (f"{4 - written} utility shards for smollm2-135m on {min(2, 4 - written)} Ray "
            "workers") in said
    assert _data(out / FOLDER / "v1") == _data(local_build[0])
    assert validate_path(out / FOLDER / "v1") == []
    assert cache_stats(calls).misses == local_build[1]


def test_an_error_in_a_worker_is_the_local_builds_one_line_and_its_shard_is_not_written(
        tmp_path, ray_cluster, smollm, session_cache):
    # the first query's question is too long for SmolLM2's 8,192-token window: its shard fails
    # at its first call, inside a worker; the second is a real NQ question
    rows = [json.loads(line) for line in (FIXTURES / "flashrag_nq_test.jsonl").open()][:2]
    rows[0]["question"] = " ".join(["why"] * 9000) + "?"
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ("--dataset", f"jsonl:{queries}", "--corpus", FIXTURES / "flashrag_corpus.jsonl",
            "--encoder", "bm25", "--k", 1, "--llm", "smollm2-135m", "--shard-size", 1,
            "--max-new-tokens", 8)
    failed = {}
    for executor in ("local", "ray"):
        extra = ("--ray-address", ray_cluster) if executor == "ray" else ()
        out = tmp_path / executor
        result = _build(out, *args, "--cache-dir", _cache(tmp_path / f"{executor}-calls",
                                                          session_cache),
                        "--executor", executor, *extra)
        assert result.exit_code == 1
        assert isinstance(result.exception, PromptTooLongError)
        failed[executor] = result.exception.line()
        assert not list(out.rglob("data-00000.jsonl"))  # the failed shard is not written
    assert failed["ray"] == failed["local"]
    assert failed["ray"].startswith("the prompt for 'test_0' has ")
    assert "\n" not in failed["ray"]


def test_a_ray_address_where_nothing_listens_is_one_line_before_any_work(tmp_path, no_loads):
    pytest.importorskip("ray")
    with socket.socket() as probe:  # a free port: nothing listens there
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    result = _build(tmp_path / "out", *ARGS, "--executor", "ray", "--ray-address", address)
    assert result.exit_code == 1
    assert isinstance(result.exception, InputError)
    assert result.exception.line() == (
        f"field 'address': cannot connect to the Ray cluster at {address}: [Errno 111] "
        "Connection refused (start it with `ray start --head`, or leave out --ray-address to "
        "start Ray here)")
    assert no_loads == [] and not (tmp_path / "out").exists()


def test_without_ray_installed_the_ray_executor_names_the_extra(tmp_path, no_loads, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    monkeypatch.delitem(sys.modules, "labeler.executors.ray", raising=False)
    result = _build(tmp_path / "out", *ARGS, "--executor", "ray")
    assert result.exit_code == 1
    assert isinstance(result.exception, MissingDependencyError)
    assert result.exception.line() == (
        "the Ray executor needs the 'labeler[ray]' package: pip install 'labeler[ray]' "
        "(from a checkout: pip install -e '.[ray]')")
    assert no_loads == [] and not (tmp_path / "out").exists()  # before any model is loaded


@pytest.mark.parametrize(("args", "line"), [
    (("--workers", 2), ("field 'workers': does not apply to the local executor "
                       "(use --executor ray)")),
    (("--ray-address", "head:6379"), ("field 'address': does not apply to the local executor "
                                     "(use --executor ray)")),
    (("--tensor-parallel", 2), ("field 'tensor_parallel': the hf backend runs a model on one "
                               "device: tensor parallelism needs the vllm backend (add "
                               "--backend vllm, or leave out --tensor-parallel)")),
])
def test_options_that_do_not_apply_are_refused_before_any_work(tmp_path, no_loads, args, line):
    result = _build(tmp_path / "out", *ARGS, *args)
    assert result.exit_code == 1
    assert isinstance(result.exception, InputError)
    assert result.exception.line() == line
    assert no_loads == []
    assert not (tmp_path / "out").exists()
