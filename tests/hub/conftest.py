"""A running Hub-compatible server (tests/support/hub_server.py) and real artifact versions to
publish.

The versions are written by the suite's `write` fixture (tests/conftest.py) from the three real
utility records of tests/artifacts/fixtures.
"""

from __future__ import annotations

import os

import huggingface_hub.constants
import pytest
from support.hub_server import HubServer

#: recognisable, so a test can look for it in every output, log and file
TOKEN = "hf_LabelerSecretTokenMustNeverLeak42"


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
