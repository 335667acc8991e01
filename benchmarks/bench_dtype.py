"""Benchmark the hf backend's dtypes on the CPU: float32 against bfloat16 (not a test).

    python benchmarks/bench_dtype.py [--limit 8]

Measures, in one run on this machine, with the bundled SmolLM2 in each dtype on the backend's
own threads, interleaved: a prefill forward pass over real RAG prompts (8 x 256 tokens), greedy
generation (bench_llm's 16 questions x 32 tokens, batched); then a whole utility build of nq-sample's
human gold pools in this process (its generate time and wall time); then how many of the
builds' greedy answers and utility labels differ between the dtypes. The hf backend's CPU
default (labeler.llm.hf.DEFAULT_DTYPES) is chosen from this table.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import click
from bench_llm import backend_threads, generation_rate, prefill_rows, timed
from rich.console import Console
from rich.table import Table
from timed_build import fresh_caches, measured_build

from labeler.llm import load_backend
from labeler.sources.registry import load_source

DTYPES = ("float32", "bfloat16")


@click.command()
@click.option("--limit", default=8, show_default=True, help="Queries of the bundled sample.")
def main(limit: int) -> None:
    queries = load_source("nq-sample", limit=64).queries
    with tempfile.TemporaryDirectory(prefix="bench-dtype-") as tmp:
        root = Path(tmp)
        caches = fresh_caches(root, *DTYPES)
        backends = {d: load_backend("smollm2-135m", dtype=d, cache_dir=caches[d],
                                    use_cache=False) for d in DTYPES}
        threads = backend_threads(backends["float32"])
        measures = {d: {"prefill": [], "rate": []} for d in DTYPES}
        for _ in range(3):  # interleaved, so both dtypes see the same machine load
            for dtype, backend in backends.items():
                measures[dtype]["prefill"].append(_prefill_seconds(backend, queries))
                measures[dtype]["rate"].append(generation_rate(backend, queries[:16]).rate)
        for dtype in DTYPES:
            start = time.perf_counter()
            stats, version = measured_build(root / dtype, caches[dtype], limit=limit,
                                            dtype=dtype)
            measures[dtype].update(stats=stats, wall=time.perf_counter() - start,
                                   records=_records(version))
    Console().print(_table(measures, limit, threads))


def _prefill_seconds(backend, queries) -> float:
    """One forward pass over 8 rows of 256 tokens of real RAG prompts."""
    rows = prefill_rows(backend, queries, 8, 256)
    return timed(lambda: backend.model(input_ids=rows, use_cache=False), backend)


def _records(version: Path) -> list[dict]:
    return [json.loads(line) for file in sorted(version.glob("data-*.jsonl"))
            for line in file.read_text(encoding="utf-8").splitlines()]


def _answers(records: list[dict]) -> list[tuple[str, bool | None]]:
    """(answer, utility label) of each query's closed-book answer (no label) and candidates."""
    return [answer for r in records for answer in [(r["closed_book_answer"], None)] + [
        (c["answer"], c["utility"]) for c in r["candidates"]]]


def _table(measures: dict[str, dict], limit: int, threads: str) -> Table:
    fp32, bf16 = (measures[d] for d in DTYPES)
    table = Table(title=f"hf on the CPU ({threads}): float32 against bfloat16, smollm2-135m "
                        "(speeds: best of 3, interleaved)")
    for column in ("measure", "float32", "bfloat16", "bfloat16 / float32"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    prefill = {d: min(measures[d]["prefill"]) for d in DTYPES}
    rate = {d: max(measures[d]["rate"]) for d in DTYPES}
    table.add_row("prefill, 8 x 256 tokens (s)", f"{prefill['float32']:.2f}",
                  f"{prefill['bfloat16']:.2f}",
                  f"{prefill['float32'] / prefill['bfloat16']:.2f}x faster")
    table.add_row("generate, 16 x 32 tokens (tok/s)", f"{rate['float32']:.1f}",
                  f"{rate['bfloat16']:.1f}", f"{rate['bfloat16'] / rate['float32']:.2f}x faster")
    a, b = fp32["stats"], bf16["stats"]
    table.add_row(f"build of {limit} queries: generate (s)", f"{a.seconds:.1f}",
                  f"{b.seconds:.1f}", f"{a.seconds / b.seconds:.2f}x faster")
    table.add_row(f"build of {limit} queries: tokens", f"{a.tokens:,}", f"{b.tokens:,}", "")
    table.add_row(f"build of {limit} queries: tokens / s of generate", f"{a.rate:.1f}",
                  f"{b.rate:.1f}", f"{b.rate / a.rate:.2f}x faster")
    table.add_row(f"build of {limit} queries: wall (s, one after the other)",
                  f"{fp32['wall']:.1f}", f"{bf16['wall']:.1f}",
                  f"{fp32['wall'] / bf16['wall']:.2f}x faster")
    answers = list(zip(_answers(fp32["records"]), _answers(bf16["records"]), strict=True))
    labels = [(x[1], y[1]) for x, y in answers if x[1] is not None]
    table.add_row("[bold]greedy answers that differ", "", "",
                  f"[bold]{sum(x[0] != y[0] for x, y in answers)} of {len(answers)}")
    table.add_row("[bold]utility labels that differ", "", "",
                  f"[bold]{sum(x != y for x, y in labels)} of {len(labels)}")
    return table


if __name__ == "__main__":
    main()
