"""Benchmark `labeler build` as a user waits for it: whole processes, start-up included (not a
test).

    python benchmarks/bench_build.py [--limit 32]

Runs, in one session on this machine, the same utility build of the bundled NQ sample (human
gold pools, the bundled SmolLM2, fresh call caches each time):
- one shard (the default shard size) against one query per shard: what resumability costs in
  batching when shards are made small;
- a rerun served by the call cache against the first run: what a resumed or repeated build
  costs once its calls are cached.
The data outputs are checked to be byte-identical. Then the same build in this process, with
what its generate calls ran (the hf backend's DecodeStats), against bench_llm's batched
generation on the same loaded model, the two interleaved `--repeats` times:
- tokens per CPU second of generate's thread (the machine is shared: wall time counts what other
  processes took), the build's over bench_llm's batched rate at the build's own batch size,
  the median of the repeats (target >= 0.6: answers that end early must not leave the batch
  decoding padding, and the running batch must not empty between calls), and, beside it, over
  bench_llm's 16-row batch (what a wider batch would add, not what scheduling costs);
- the fraction of decode slots that produced a token (target >= 0.8), and the batch's
  occupancy (live rows over the batch size; the queue's tail runs part-empty).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import click
from bench_llm import generation_rate
from rich.console import Console
from rich.table import Table
from timed_build import data_sha, fresh_caches, measured_build, timed_build

from labeler.llm import load_backend
from labeler.sources.registry import load_source


@click.command()
@click.option("--limit", default=32, show_default=True,
              help="Queries of the bundled sample: 32, so that the answers that run longest "
                   "(started first) end while the queue still refills the batch.")
@click.option("--repeats", default=3, show_default=True,
              help="Build and batched reference, interleaved, this many times.")
def main(limit: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        root = Path(tmp)
        measured = [f"measured-{r}" for r in range(repeats)]
        caches = fresh_caches(root, "one", "many", *measured)
        options = ("--pool", "hgp", "--limit", str(limit))
        one, one_sha = timed_build(root / "one", caches["one"], *options, "--shard-size", "256")
        many, many_sha = timed_build(root / "many", caches["many"], *options, "--shard-size", "1")
        cached, cached_sha = timed_build(root / "cached", caches["one"], *options,
                                         "--shard-size", "256")
        runs, shas = [], set()
        questions = load_source("nq-sample", limit=16).queries
        for name in measured:  # the references beside each build, on the same loaded model
            backend = _loaded(caches[name])
            own = generation_rate(backend, questions, batch_size=backend.batch_size)
            wide = generation_rate(backend, questions)
            stats, version = measured_build(root / name, caches[name], limit=limit)
            shas.add(data_sha(version.glob("data-*.jsonl")))
            runs.append((stats, own.cpu_rate, wide.cpu_rate, backend.batch_size))
    if not {one_sha} == {many_sha} == {cached_sha} == shas:
        raise SystemExit("the data differ between shard sizes: a bug, not a benchmark result")
    table = Table(title=f"labeler build, {limit} queries, whole processes (same data bytes)")
    for column in ("run", "seconds", "ratio"):
        table.add_column(column, justify="left" if column == "run" else "right")
    table.add_row("one shard of 256 (default)", f"{one:.1f}", "1.00")
    table.add_row("one query per shard", f"{many:.1f}", f"{many / one:.2f}")
    table.add_row("rerun, calls cached", f"{cached:.1f}", f"{cached / one:.2f}")
    Console().print(table)
    Console().print(_generation_table(runs, limit))


def _generation_table(runs: list, limit: int) -> Table:
    """The build's generate calls against bench_llm's batched rate, in CPU time, at the build's
    own batch size (the target: what scheduling costs) and at bench_llm's 16 rows: each
    repeat's ratios, and the medians."""
    stats, batch = runs[-1][0], runs[-1][3]
    table = Table(title=f"the build's generation ({limit} queries, {stats.prompts} answers, "
                        f"one process, {len(runs)} repeats interleaved)")
    for column in ("measure", "value", "target"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    table.add_row("tokens generated", f"{stats.tokens:,}", "")
    table.add_row("CPU seconds inside generate", f"{stats.cpu_seconds:.1f}", "")
    own, wide = [], []
    for r, (ran, own_rate, wide_rate, _) in enumerate(runs, 1):
        own.append(ran.cpu_rate / own_rate)
        wide.append(ran.cpu_rate / wide_rate)
        table.add_row(f"repeat {r}: build / batched tokens per CPU s ({batch} rows; 16 rows)",
                      f"{ran.cpu_rate:,.1f} / {own_rate:,.1f} = {own[-1]:.2f}; "
                      f"/ {wide_rate:,.1f} = {wide[-1]:.2f}", "")
    ratio = statistics.median(own)
    table.add_row(f"[bold]build / batched at its batch size, {batch} rows (median)",
                  f"[bold]{ratio:.2f}", _verdict(ratio, 0.6))
    table.add_row("build / batched at 16 rows (median)", f"{statistics.median(wide):.2f}", "")
    table.add_row("[bold]decode slots that produced a token", f"[bold]{stats.produced:.2f}",
                  _verdict(stats.produced, 0.8))
    table.add_row("batch occupancy (live rows / batch size)", f"{stats.occupancy:.2f}", "")
    table.add_row("prefill tokens (padding included)", f"{stats.prefill_tokens:,}", "")
    return table


def _loaded(cache: Path):
    """The backend the in-process build loaded (one per process and settings)."""
    return load_backend("smollm2-135m", cache_dir=cache, use_cache=False)


def _verdict(value: float, target: float) -> str:
    return f">= {target:g} [green]met" if value >= target else f">= {target:g} [red]not met"


if __name__ == "__main__":
    main()
