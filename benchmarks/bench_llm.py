"""Benchmark the hf backend on the bundled SmolLM2-135M-Instruct (not a test).

    python benchmarks/bench_llm.py [--prompts 16] [--batch-size 16] [--max-tokens 32]
                                   [--dtype float32|bfloat16]

Measures, in one run on this machine:
- generation throughput, batched vs one prompt at a time (same prompts, same greedy answers):
  tokens generated (an ending EOS included) per second inside generate;
- prefill FLOP/s (2 x parameters x tokens / seconds, one forward pass over real RAG prompts)
  against a plain torch matmul's FLOP/s in the model's dtype.
Everything runs on the threads the backend computes with on the CPU (`CPU_THREADS`), which the
table states. Targets: batched >= 3x one at a time; prefill >= 60% of matmul FLOP/s.
"""

from __future__ import annotations

import os

# Before torch loads OpenMP: spinning worker threads starve each other when the cores are
# shared (here: 2 cores, several processes), making a batched decode step up to 30x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import time
from copy import copy
from dataclasses import dataclass

import click
import torch
from rich.console import Console
from rich.table import Table

from labeler.llm import Sampling, chat, load_backend
from labeler.llm.hf import CPU_THREADS
from labeler.sources.registry import load_source


@click.command()
@click.option("--prompts", "n_prompts", default=16, show_default=True,
              help="NQ questions (bundled nq-sample) to generate for.")
@click.option("--batch-size", default=16, show_default=True, help="Rows per batch, batched run.")
@click.option("--max-tokens", default=32, show_default=True, help="Tokens per answer.")
@click.option("--prefill-tokens", default=2048, show_default=True,
              help="Tokens per prefill forward pass (rows of --prefill-length).")
@click.option("--prefill-length", default=256, show_default=True, help="Tokens per prefill row.")
@click.option("--repeats", default=3, show_default=True, help="Timed repeats; the best counts.")
@click.option("--device", help="cpu or cuda (default: cuda if available).")
@click.option("--dtype", help="The weights' dtype, float32 or bfloat16 (default: the "
                              "backend's).")
def main(n_prompts, batch_size, max_tokens, prefill_tokens, prefill_length, repeats,
         device, dtype) -> None:
    """Generation speed-up from batching, and prefill FLOP/s against matmul FLOP/s."""
    backend = load_backend("smollm2-135m", device=device, dtype=dtype, use_cache=False)
    threads = backend_threads(backend)
    queries = load_source("nq-sample", limit=max(n_prompts, 64)).queries
    batched, alone = (generation_rate(backend, queries[:n_prompts], batch_size=size,
                                      max_tokens=max_tokens) for size in (batch_size, 1))
    if batched.answers != alone.answers:
        raise SystemExit("batched and one-at-a-time greedy answers differ")

    rows = prefill_rows(backend, queries, prefill_tokens // prefill_length, prefill_length)
    params = sum(p.numel() for p in backend.model.parameters())
    flops = 2 * params * rows.numel()
    prefill_s, matmul_flops = [], []
    for _ in range(repeats):  # interleaved, so both see the same machine load
        prefill_s.append(timed(lambda: backend.model(input_ids=rows, use_cache=False), backend))
        matmul_flops.append(_matmul_flops(backend.dtype, backend.device))
    prefill_flops = flops / min(prefill_s)
    best_matmul = max(matmul_flops)

    table = Table(title=f"hf backend, smollm2-135m ({backend.dtype}, {backend.device.type}, "
                        f"{threads}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']})")
    for column in ("measure", "value", "target"):
        table.add_column(column, justify="right" if column != "measure" else "left")
    table.add_row(f"generate, batch of {batch_size}", f"{batched.rate:,.1f} tok/s", "")
    table.add_row("generate, one at a time", f"{alone.rate:,.1f} tok/s", "")
    table.add_row("[bold]batched / one at a time", f"[bold]{batched.rate / alone.rate:.2f}x",
                  _verdict(batched.rate / alone.rate, 3.0, "x"))
    table.add_row(f"prefill, {rows.shape[0]} x {rows.shape[1]} tokens",
                  f"{prefill_flops / 1e9:,.1f} GFLOP/s", "")
    table.add_row("matmul, 2048^3", f"{best_matmul / 1e9:,.1f} GFLOP/s", "")
    table.add_row("[bold]prefill / matmul", f"[bold]{prefill_flops / best_matmul:.1%}",
                  _verdict(prefill_flops / best_matmul, 0.6, "%"))
    Console().print(table)


@dataclass
class Generation:
    """One timed greedy generate: its answers and tokens per second inside it."""

    answers: list
    rate: float
    cpu_rate: float  # tokens per CPU second of generate's thread
    prefill_share: float  # the fraction of that CPU time admitting rows (prefill) took


def generation_rate(backend, queries, *, batch_size: int = 16,
                    max_tokens: int = 32) -> Generation:
    """Greedy answers to the queries' questions in batches of `batch_size` (after a warm-up),
    and the tokens per second generate's running batch produced (`batched_rate`)."""
    prompts = [chat(q.question) for q in queries]
    greedy = Sampling(max_tokens=max_tokens)
    backend.generate(prompts[:2], greedy)  # warm-up
    return batched_rate(backend, prompts, greedy, batch_size=batch_size)


def batched_rate(backend, prompts: list, sampling: Sampling, *, batch_size: int) -> Generation:
    """One plain generate call over `prompts` in a running batch of `batch_size` rows: its
    answers and the tokens per second it produced (its `DecodeStats`)."""
    size, backend.batch_size = backend.batch_size, batch_size
    stats = backend.decoder.stats
    before = copy(stats)
    try:
        answers = backend.generate(prompts, sampling)
    finally:
        backend.batch_size = size
    ran = stats - before
    return Generation(answers, ran.rate, ran.cpu_rate, ran.prefill_share)


def backend_threads(backend) -> str:
    """On the CPU, set this process's torch threads to the backend's own (its prefill and
    matmul below then run as generate does); the threads, as the table says them."""
    if backend.device.type != "cpu":
        return "GPU"
    torch.set_num_threads(CPU_THREADS)
    return f"{CPU_THREADS} thread{'s' if CPU_THREADS > 1 else ''} (hf CPU_THREADS)"


def prefill_rows(backend, queries, n_rows: int, length: int) -> torch.Tensor:
    """Real RAG prompts (question + gold passage), rendered, tokenized, cut into full rows."""
    stream: list[int] = []
    for q in queries:
        passages = " ".join(p.contents for p in q.gold)
        text = backend.render(chat(f"{passages}\n\nQuestion: {q.question}"))
        stream += backend.tokenizer(text, add_special_tokens=False).input_ids
        if len(stream) >= n_rows * length:
            break
    if len(stream) < n_rows * length:
        raise SystemExit(f"not enough prompt text for {n_rows} rows of {length} tokens")
    rows = torch.tensor(stream[:n_rows * length]).view(n_rows, length)
    return rows.to(backend.device)


@torch.inference_mode()
def timed(run, backend) -> float:
    run()  # warm-up
    _sync(backend.device)
    start = time.perf_counter()
    run()
    _sync(backend.device)
    return time.perf_counter() - start


@torch.inference_mode()
def _matmul_flops(dtype: torch.dtype, device: torch.device, n: int = 2048) -> float:
    a, b = (torch.randn(n, n, dtype=dtype, device=device) for _ in range(2))
    a @ b
    _sync(device)
    start = time.perf_counter()
    for _ in range(5):
        a @ b
    _sync(device)
    return 5 * 2 * n**3 / (time.perf_counter() - start)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _verdict(value: float, target: float, unit: str) -> str:
    shown = f">= {target:.0%}" if unit == "%" else f">= {target:g}x"
    return f"{shown} [green]met" if value >= target else f"{shown} [red]not met"


if __name__ == "__main__":
    main()
