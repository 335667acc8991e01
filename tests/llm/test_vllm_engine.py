"""How the vllm backend sets its engine up on this machine's device (vLLM's CPU build here):
the device the build runs on, float32 on the CPU, and the compile cache under labeler's cache
folder, the model reached by a link named by its revision."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labeler.errors import InputError
from labeler.llm import load_backend

pytestmark = pytest.mark.vllm


def test_the_key_names_the_device_and_dtype_the_engine_runs(smollm_vllm):
    from vllm.platforms import current_platform

    key = smollm_vllm.key()
    assert key["backend"] == "vllm" and key["device"] == current_platform.device_type
    if key["device"] == "cpu":
        assert key["dtype"] == "float32" == smollm_vllm.dtype


def test_another_device_than_the_builds_is_refused_before_loading(smollm_vllm):
    other = "cuda" if smollm_vllm.device == "cpu" else "cpu"
    with pytest.raises(InputError, match=rf"^field 'device': this vllm build runs on "
                                         rf"'{smollm_vllm.device}', not '{other}'$"):
        load_backend("smollm2-135m", backend="vllm", device=other, use_cache=False)


def test_the_model_reaches_vllm_by_its_revision_under_labelers_cache(smollm_vllm):
    root = Path(os.environ["VLLM_CACHE_ROOT"])
    link = root.resolve() / "models" / f"smollm2-135m-{smollm_vllm.revision[:16]}"
    assert smollm_vllm.llm.llm_engine.model_config.model == str(link)
    assert link.is_symlink() and (link / "config.json").is_file()
    assert any((root / "inductor").rglob("*.py"))  # the compiled kernels, there
