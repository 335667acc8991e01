"""The Ray executor asking a served model: the workers of a real local Ray cluster (2 CPUs,
its nodes' environment holding the API key) are each a client of the session's `vllm serve`,
and the manifest records the requests and tokens their answers reported, added up over the
workers, as the proxy in front of the server counted them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.served import API_KEY

from labeler.cli import cli
from labeler.llm.call_store import cache_stats
from labeler.workflows.validate import validate_path

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module", autouse=True)
def _key_on_the_nodes():
    """OPENAI_API_KEY in this process before the module's cluster starts, so its nodes (and
    their workers) have it, as `ray start` on a cluster's nodes would: labeler hands Ray no
    key."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", API_KEY)
        yield


def test_a_ray_builds_manifest_adds_up_the_served_usage_of_its_workers(
        vllm_server, ray_cluster, session_cache, tmp_path):
    """Two queries with their human gold passage, one a shard, on 2 workers: each worker
    counts what it asked and returns it with its shard; the driver loads no model."""
    _, proxy = vllm_server
    (tmp_path / "calls").mkdir()
    (tmp_path / "calls/models").symlink_to(Path(session_cache) / "models")
    before = proxy.total()
    result = CliRunner().invoke(cli, [
        "build", "--dataset", "nq-sample", "--llm", "smollm2-135m", "--limit", "2", "--pool",
        "hgp", "--shard-size", "1", "--max-new-tokens", "8", "--backend", "openai",
        "--base-url", proxy.base_url, "--executor", "ray", "--ray-address", ray_cluster,
        "--workers", "2", "--cache-dir", str(tmp_path / "calls"), "--out",
        str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "2 utility shards for smollm2-135m on 2 Ray workers" in " ".join(
        result.output.split())
    folder = tmp_path / "out/utility/nq-sample/smollm2-135m/v1"
    assert validate_path(folder) == []
    served = json.loads((folder / "manifest.json").read_text())["served"]
    asked = proxy.total() - before
    assert served["usage"]["requests"] == asked == cache_stats(tmp_path / "calls").entries
    assert served["usage"]["prompt_tokens"] > 0 and served["usage"]["completion_tokens"] > 0
    assert served["used"] == ["chat"] and served["server"] == "0.32.0"
