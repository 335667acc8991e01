"""The sources' tests read the Hub mirror (tests/support/hub_mirror.py) in this process."""

from __future__ import annotations

import pytest
from support.hub_mirror import mirror_env
from support.hub_server import HubServer


@pytest.fixture
def hub_from_fixtures(tmp_path, monkeypatch):
    """This process reading the Hub mirror (tests/support/hub_mirror.py) through the tests'
    server."""
    from huggingface_hub import constants

    with HubServer() as hub:
        for name, value in mirror_env(hub, tmp_path).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(constants, "ENDPOINT", hub.url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            hub.url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
        yield hub
