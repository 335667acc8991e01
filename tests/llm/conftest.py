"""The contract suite runs once per backend: hf always; vllm, and openai against a real
`vllm serve`, where vllm imports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def questions() -> list[str]:
    """40 real NQ-open dev questions (see fixtures/README.md)."""
    with open(FIXTURES / "nq_open_dev_40.jsonl", encoding="utf-8") as handle:
        return [json.loads(line)["question"] for line in handle]


@pytest.fixture(scope="session", params=[pytest.param("hf", marks=pytest.mark.slow),
                                         pytest.param("vllm", marks=pytest.mark.vllm),
                                         pytest.param("openai", marks=[pytest.mark.vllm,
                                                                       pytest.mark.slow])])
def backend(request):
    """The bundled SmolLM2-135M-Instruct through each backend, without the call cache."""
    return request.getfixturevalue({"hf": "smollm", "vllm": "smollm_vllm",
                                    "openai": "smollm_served"}[request.param])
