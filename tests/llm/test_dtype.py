"""--dtype: a backend takes only the dtypes it names (its class's `dtypes`), checked when the
config is made, before any model loads; the one chosen travels to the backend and into the
manifest's llm_config, and the dtype the model runs in into llm_runtime and the call cache's
key (hf here; vllm's engine in test_vllm_engine)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from labeler.cli import cli, main
from labeler.errors import InputError
from labeler.llm.config import LLMConfig


def test_vllm_takes_the_papers_float16_and_records_it():
    config = LLMConfig("smollm2-135m", backend="vllm", dtype="float16")
    assert config.describe()["dtype"] == "float16"
    assert LLMConfig("smollm2-135m").describe()["dtype"] is None  # the backend's default


def test_on_hf_keeps_a_dtype_hf_takes_and_drops_one_it_does_not():
    """perplexity and AttR read a vllm artifact on hf: its bfloat16 weights stay bfloat16,
    the paper's float16 (which hf refuses on the CPU) falls back to hf's default."""
    assert LLMConfig("smollm2-135m", backend="vllm", dtype="bfloat16").on_hf().dtype == "bfloat16"
    assert LLMConfig("smollm2-135m", backend="vllm", dtype="float16").on_hf().dtype is None


def test_a_dtype_the_backend_does_not_take_is_refused_with_the_choices():
    with pytest.raises(InputError, match=r"^field 'dtype': the vllm backend takes no dtype "
                                         r"'fp16': use one of auto, float16, bfloat16, "
                                         r"float32$"):
        LLMConfig("smollm2-135m", backend="vllm", dtype="fp16")
    with pytest.raises(InputError, match=r"the hf backend takes no dtype 'float16': use one "
                                         r"of float32, bfloat16$"):
        LLMConfig("smollm2-135m", backend="hf", dtype="float16")


def test_the_dtype_reaches_the_backend(monkeypatch):
    import labeler.llm

    seen = {}
    monkeypatch.setattr(labeler.llm, "load_backend", lambda name, **options: seen.update(options))
    LLMConfig("smollm2-135m", backend="vllm", dtype="float16").load()
    assert seen["dtype"] == "float16" and seen["backend"] == "vllm" and seen["share"] == 1.0


def test_each_dtype_a_config_routes_to_loads_with_its_share_of_the_gpu(monkeypatch):
    import labeler.llm

    seen = []
    monkeypatch.setattr(labeler.llm, "load_backend",
                        lambda name, **options: seen.append(options) or object())
    config = LLMConfig("smollm2-135m", backend="vllm", dtype="auto",
                       call_dtypes=(("one-passage answers", "float16"),
                                    ("pointwise judgments", "float16"),
                                    ("closed-book answers", "auto")))
    config.load()
    route = config.router()
    assert route("closed-book answers") is None  # the loaded model's own dtype
    assert route("one-passage answers") is route("pointwise judgments")  # one copy a dtype
    assert [(s["dtype"], s["share"]) for s in seen] == [("auto", 0.5), ("float16", 0.5)]
    on_hf = LLMConfig("smollm2-135m", call_dtypes=(("one-passage answers", "bfloat16"),))
    on_hf.load()
    assert seen[-1]["share"] == 1.0  # hf declares no device share


def test_judge_refuses_a_dtype_in_one_line_before_loading(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["labeler", "judge", "--dataset", "nq-sample", "--method",
                                      "lvr", "--llm", "smollm2-135m", "--dtype", "float16",
                                      "--out", str(tmp_path / "lvr.jsonl")])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        "error: field 'dtype': the hf backend takes no dtype 'float16': use one of float32, "
        "bfloat16")
    assert not (tmp_path / "lvr.jsonl").exists()


@pytest.mark.vllm
def test_the_engine_is_asked_for_the_dtype_on_a_gpu():
    from labeler.llm.vllm import VLLMBackend  # make test-vllm installs vllm

    engine = object.__new__(VLLMBackend)  # the options alone: no model is loaded
    engine.device, engine.share = "cuda", 1.0
    for asked, dtype in ((None, "auto"), ("float16", "float16"), ("bfloat16", "bfloat16")):
        engine.asked_dtype = asked
        assert engine._engine_options("unused", None) == {"dtype": dtype,
                                                          "gpu_memory_utilization": 0.9}
    engine.share = 0.5  # one of two engines of a process (LLMConfig.call_dtypes)
    assert engine._engine_options("unused", None)["gpu_memory_utilization"] == 0.45


def test_hf_in_bfloat16_is_in_the_manifest_and_keys_its_own_cached_answers(smollm, tmp_path):
    from labeler.llm import Sampling, chat, load_backend
    from labeler.llm.cache import CachedBackend

    calls = tmp_path / "calls"
    calls.mkdir()
    # reuse the model the `smollm` fixture converted, so the time goes to the build
    (calls / "models").symlink_to(Path(smollm.model.name_or_path).parent)
    result = CliRunner().invoke(cli, [
        "build", "--dataset", "nq-sample", "--llm", "smollm2-135m", "--dtype", "bfloat16",
        "--limit", "1", "--pool", "hgp", "--max-new-tokens", "8", "--cache-dir", str(calls),
        "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    manifest = json.loads(next((tmp_path / "out").rglob("manifest.json")).read_text())
    assert manifest["llm_config"]["dtype"] == "bfloat16"
    assert manifest["llm_runtime"] == {"backend": "hf", "dtype": "bfloat16", "device": "cpu"}

    bf16 = load_backend("smollm2-135m", dtype="bfloat16", cache_dir=calls, use_cache=False)
    assert (bf16.model.dtype, smollm.model.dtype) == (torch.bfloat16, torch.float32)
    prompt, greedy = [chat("Who wrote Hamlet?")], Sampling(max_tokens=4)
    CachedBackend(bf16, cache_dir=calls).generate(prompt, greedy)
    fp32 = CachedBackend(smollm, cache_dir=calls)
    fp32.generate(prompt, greedy)
    assert fp32.backend_calls == 1  # float32 does not reuse bfloat16's answer
