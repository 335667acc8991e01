"""Shared fixtures: no network, user folders in a temp dir, the bundled LLM loaded once."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _offline_and_isolated(tmp_path, monkeypatch):
    """Every test runs offline with its own call cache and HF cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("LABELER_CACHE_DIR", str(tmp_path / "labeler-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))


@pytest.fixture(scope="session")
def smollm():
    """The bundled SmolLM2-135M-Instruct through the real `hf` backend, without the call cache.

    Loaded once per test session; tests that need caching wrap it themselves.
    """
    from labeler.llm import load_backend

    return load_backend("smollm2-135m", backend="hf", use_cache=False)
