"""The GPU check (benchmarks/gpu.sh, benchmarks/bench_gpu.py) in its smoke mode: a tiny model of
the Llama-3.1-8B architecture with random weights, on the CPU, through the real hf backend and
the bundled SmolLM2 chat tokenizer, and its greedy decode through vllm where vllm imports
(vLLM's CPU build: make install-vllm), else the line saying why not. Nothing here asserts a
time: the script runs end to end, its table has its rows, and its numbers agree with each other
and with the FLOPs formula, which is checked by hand on the Llama-3.1-8B configuration."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from transformers import AutoModelForCausalLM, LlamaConfig

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # as `python benchmarks/bench_gpu.py` has it
bench = importlib.import_module("bench_gpu")  # the check itself
gpu_model = importlib.import_module("gpu_model")  # the model's shapes and FLOPs
gpu_report = importlib.import_module("gpu_report")  # the rows it reports

LLAMA_8B = LlamaConfig(**gpu_model.LLAMA_3_1_8B)


def test_the_flops_formula_on_llama_3_1_8b_by_hand():
    # one layer's matrix products: q and o 4096 x 4096, k and v 4096 x 1024 (8 KV heads of
    # 128), gate, up and down 4096 x 14336
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
    assert layer == 218_103_808
    assert gpu_model.matmul_weights(LLAMA_8B) == (32 * layer, 128_256 * 4096)
    # with the input embeddings and 2 x 32 + 1 RMSNorm weights: Llama-3.1-8B's 8.03 B
    assert 32 * layer + 2 * 128_256 * 4096 + 65 * 4096 == 8_030_261_248
    # a 1024-token prompt, logits of its last position: 2 W T + 2 V d + 4 L d_attn (1 + .. + T)
    # = 14,293,651,161,088 + 1,050,673,152 + 275,146,342,400 (14.2 GFLOP a token)
    assert gpu_model.forward_flops(LLAMA_8B, 1024) == 14_569_848_176_640
    # one decode step at position 1025: its query attends 1025 keys
    assert gpu_model.forward_flops(LLAMA_8B, 1, past=1024) == \
        2 * 32 * layer + 2 * 128_256 * 4096 + 4 * 32 * 4096 * 1025
    # a prompt then a step is the longer prompt at once (the head's logits aside)
    assert gpu_model.forward_flops(LLAMA_8B, 1024, kept=0) + \
        gpu_model.forward_flops(LLAMA_8B, 1, past=1024, kept=0) == \
        gpu_model.forward_flops(LLAMA_8B, 1025, kept=0)


def test_the_formula_counts_the_real_architectures_matrix_weights():
    with torch.device("meta"):  # shapes only: no memory for 8 B weights
        model = AutoModelForCausalLM.from_config(LLAMA_8B, dtype=torch.bfloat16)
    assert sum(p.numel() for p in model.parameters()) == 8_030_261_248
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert linear == sum(gpu_model.matmul_weights(LLAMA_8B))
    assert model.config._attn_implementation == "sdpa"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_without_a_gpu_the_full_check_says_to_use_smoke():
    result = CliRunner().invoke(bench.main, [])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == \
        "Error: torch sees no CUDA GPU: run with --smoke on the CPU"
    result = CliRunner().invoke(bench.main, ["--device", "cpu"])  # 8 B weights: not on a CPU
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == \
        "Error: the 8B-shaped model needs a CUDA GPU: use --smoke on the CPU"


def test_without_vllm_its_row_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ModuleNotFoundError
    monkeypatch.delitem(sys.modules, "labeler.llm.vllm", raising=False)
    assert bench.vllm_skip_reason(torch.device("cpu")) == \
        "import vllm failed (ModuleNotFoundError: import of vllm halted; None in sys.modules)"


def test_a_vllm_build_for_another_device_is_skipped():
    pytest.importorskip("vllm", reason="vllm is not installed")
    from vllm.platforms import current_platform

    other = "cpu" if current_platform.device_type == "cuda" else "cuda"
    assert bench.vllm_skip_reason(torch.device(other)) == \
        f"this vllm build runs on {current_platform.device_type}, the check on {other}"


def test_gpu_sh_runs_end_to_end_in_smoke_mode(smollm, session_cache, tmp_path):
    out = tmp_path / "out"
    env = os.environ | {"PYTHON": sys.executable, "OUT": str(out),
                        "LABELER_CACHE_DIR": session_cache}  # SmolLM2 converted there once
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu.sh"), "--smoke"],
                          capture_output=True, text=True, env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    for row in ("matmul 256^3, float32 (before)", "matmul 256^3, float32 (after)",
                "prefill: loglikelihood ", "prefill: choice_probs (P(yes))",
                "prefill: loglikelihood, mixed lengths, ", "decode: generate, greedy ",
                "decode: generate, SEER sampling n=10", "decode: generate, greedy (vllm) ",
                "prefill >= 40% MFU in bf16: ",
                "vllm contract tests: skipped: --smoke (make test-vllm runs them on the CPU)"):
        assert row in text, row
    assert (out / "gpu_check.log").read_text() == text

    report = json.loads((out / "gpu_check.json").read_text())
    config = LlamaConfig(**report["config"])
    assert report["config"] == gpu_model.SMOKE and report["smoke"] and report["dtype"] == "float32"
    # 2 layers of 55,296 matrix weights, the head and the embeddings (128,256 x 64), 5 norms
    assert report["parameters"] == 2 * 55_296 + 2 * 128_256 * 64 + 5 * 64
    rows = {w["name"]: w for w in report["workloads"]}
    vllm = importlib.util.find_spec("vllm") is not None
    assert list(rows) == [w.name for w in bench.SMOKE_WORKLOADS] + vllm * [gpu_report.VLLM_ROW]
    _assert_workloads(report, rows, config)
    greedy = rows["decode: generate, greedy"]

    if not vllm:
        why = "import vllm failed (ModuleNotFoundError: No module named 'vllm')"
        assert f"\nvllm decode: skipped: {why}\n" in text
        assert report["vllm"] == {"skipped": why}
        return
    # the same prompts and cap through vllm: the same rows, tokens and FLOPs as hf's
    row = rows[gpu_report.VLLM_ROW]
    assert {k: row[k] for k in ("rows", "tokens", "flops")} == \
        {k: greedy[k] for k in ("rows", "tokens", "flops")}
    assert row["vllm_over_hf"] == pytest.approx(row["tokens_per_s"] / greedy["tokens_per_s"])
    assert f"vllm/hf {row['vllm_over_hf']:.2f}x" in text
    assert report["vllm"]["enforce_eager"] and report["vllm"]["version"] in text


def _assert_workloads(report: dict, rows: dict[str, dict], config: LlamaConfig) -> None:
    """Each row's timings, rates and MFU follow from its FLOPs, and the FLOPs from the smoke
    model's shapes and the workloads' tokens."""
    ceiling = max(report["matmul"])
    for w in rows.values():
        assert len(w["seconds"]) == 3 and w["median_s"] == sorted(w["seconds"])[1]
        assert w["tokens_per_s"] == pytest.approx(w["tokens"] / w["median_s"])
        assert w["flops_per_s"] == pytest.approx(w["flops"] / w["median_s"])
        assert w["flops_per_token"] == pytest.approx(w["flops"] / w["tokens"])
        assert w["mfu"] == pytest.approx(w["flops_per_s"] / ceiling)
        assert w["met"] == (w["mfu"] >= 0.4 if w["prefill"] else None)
    # every prefill row exactly 96 tokens (the continuation's 4 inside), so no padding
    loglikelihood = rows["prefill: loglikelihood"]
    assert (loglikelihood["rows"], loglikelihood["tokens"], loglikelihood["padding"]) == \
        (4, 384, 0)
    assert loglikelihood["flops"] == 4 * gpu_model.forward_flops(config, 96, kept=4)
    assert rows["prefill: choice_probs (P(yes))"]["flops"] == \
        4 * gpu_model.forward_flops(config, 96, kept=1)
    assert 0 < rows["prefill: loglikelihood, mixed lengths"]["padding"] < 0.5
    # decode: 4 prompts of 48 tokens, 8 new tokens each; SEER: 1 prompt, 10 samples of 4
    greedy = rows["decode: generate, greedy"]
    assert (greedy["rows"], greedy["tokens"]) == (4, 32)
    assert greedy["flops"] == 4 * (gpu_model.forward_flops(config, 48)
                                   + gpu_model.forward_flops(config, 7, past=48, kept=7))
    seer = rows["decode: generate, SEER sampling n=10"]
    assert (seer["rows"], seer["tokens"]) == (10, 40)
    assert seer["flops"] == gpu_model.forward_flops(config, 48) + \
        10 * gpu_model.forward_flops(config, 3, past=48, kept=3)
    assert report["target_met"] == all(w["met"] for w in rows.values() if w["prefill"])
