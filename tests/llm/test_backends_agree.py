"""The same labels from both backends: SmolLM2's utility build of three nq-sample queries over
their real MiniLM top 3 (fixtures/nq_sample_minilm_top3.trec), once through hf and once through
vllm (vLLM's CPU build here, float32 like hf on the CPU): the same answers, correctness and
utility labels, and log-likelihoods within support.alike's LOGLIKELIHOOD_TOLERANCE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.alike import assert_labelled_alike
from support.nq2 import TOP3_RUN

from labeler.cli import cli

pytestmark = pytest.mark.vllm

def build(backend: str, root: Path) -> list[dict]:
    """The records of a utility build of the run's three queries with `backend`."""
    result = CliRunner().invoke(cli, [
        "build", "--dataset", "nq-sample", "--llm", "smollm2-135m", "--backend", backend,
        "--limit", "3", "--k", "3", "--max-new-tokens", "32", "--with-likelihood",
        "--run", str(TOP3_RUN), "--cache-dir", str(root / "calls"), "--out", str(root / "out")])
    assert result.exit_code == 0, result.output
    [data] = (root / "out/utility/nq-sample/smollm2-135m/v1").glob("data-*.jsonl")
    manifest = json.loads((data.parent / "manifest.json").read_text())
    assert manifest["llm_runtime"] == {"backend": backend, "dtype": "float32", "device": "cpu"}
    return [json.loads(line) for line in data.read_text().splitlines()]


def test_hf_and_vllm_label_nq_sample_alike(smollm, smollm_vllm, tmp_path):
    hf, vllm = build("hf", tmp_path / "hf"), build("vllm", tmp_path / "vllm")
    assert_labelled_alike(hf, vllm, queries=3, k=3)
