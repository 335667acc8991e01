"""Benchmark the openai backend against a real `vllm serve` beside the in-process vllm backend,
on the CPU, on the bundled SmolLM2 (not a test).

    make install-vllm && .venv/bin/python benchmarks/bench_served.py [--prompts 64]

In one run: the same nq-sample questions, greedy, --max-tokens new tokens each, through the
in-process vllm backend (loaded in this process, then shut down), then through `vllm serve`
(the tests' server: float32, eager, tests/support/served.py) with --prompt-format text, the
server already up (its start-up is the server's, paid once for many builds); no call cache.
Requests/s of each, the ratio (target >= 0.8), and how many answers are identical.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP

import socket
import sys
import tempfile
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))  # the tests' server launcher
from support.served import API_KEY, VLLMServer

from labeler.llm import Sampling, chat, load_backend
from labeler.llm.gguf import gguf_snapshot
from labeler.llm.models import model_revision, resolve_model
from labeler.sources.registry import load_source


@click.command()
@click.option("--prompts", "n_prompts", default=64, show_default=True,
              help="nq-sample questions to generate for.")
@click.option("--max-tokens", default=32, show_default=True, help="New tokens per answer.")
def main(n_prompts: int, max_tokens: int) -> None:
    """Served (vllm serve, openai backend) against in-process vllm: requests/s and ratio."""
    prompts = [chat(q.question) for q in load_source("nq-sample", limit=n_prompts).queries]
    greedy = Sampling(max_tokens=max_tokens)
    results = {}
    local = load_backend("smollm2-135m", backend="vllm", use_cache=False)
    results["vllm (in-process)"] = _measure(local, prompts, greedy)
    local.llm.llm_engine.engine_core.shutdown()  # its idle engine would share the cores
    spec = resolve_model("smollm2-135m")
    with tempfile.TemporaryDirectory(prefix="bench-served-") as tmp:
        folder = gguf_snapshot(spec, model_revision(spec), None)
        server = VLLMServer(folder, Path(tmp) / "serve.log", port=_free_port())
        try:
            start = time.perf_counter()
            server.wait_ready()
            started = time.perf_counter() - start
            os.environ["OPENAI_API_KEY"] = API_KEY
            served = load_backend("smollm2-135m", backend="openai", base_url=server.base_url,
                                  prompt_format="text", use_cache=False)
            results["openai (vllm serve)"] = _measure(served, prompts, greedy)
        finally:
            server.stop()
    (rate, answers), (served_rate, served_answers) = results.values()
    table = Table(title=f"{len(prompts)} nq-sample questions, greedy, {max_tokens} new tokens, "
                        f"SmolLM2-135M on the CPU (float32)")
    for column in ("backend", "requests/s", "vs in-process", "identical answers"):
        table.add_column(column, justify="left" if column == "backend" else "right")
    table.add_row("vllm (in-process)", f"{rate:.2f}", "1.00", "")
    same = sum(a == b for a, b in zip(answers, served_answers))
    table.add_row("openai (vllm serve)", f"{served_rate:.2f}", f"{served_rate / rate:.2f}",
                  f"{same}/{len(answers)}")
    console = Console()
    console.print(table)
    console.print(f"the server was ready {started:.0f} s after it started (once per server)")


def _measure(backend, prompts, sampling) -> tuple[float, list[str]]:
    """Requests/s of one generate call over `prompts` after a warm-up, and the answers."""
    backend.generate(prompts[:2], sampling)
    start = time.perf_counter()
    answers = [a[0].text for a in backend.generate(prompts, sampling)]
    return len(prompts) / (time.perf_counter() - start), answers


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


if __name__ == "__main__":
    main()
