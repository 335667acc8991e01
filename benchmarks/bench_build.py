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
generation on the same loaded model, interleaved `--repeats` times, in tokens per CPU second of
generate's thread (the machine is shared: wall time counts what other processes took):
- the target's reference: one plain batched generate over the build's own prompts and
  sampling (those its generate calls streamed), at the build's batch size, its answers checked
  to be the build's. The build / reference ratio, the median of the repeats, is what the
  build's scheduling costs (target >= 0.6: its calls must not split the queue, leaving the
  batch to empty between them);
- beside it, bench_llm's 16 short closed-book questions (32 tokens each) at the build's batch
  size and at 16 rows: the former reference, shown so that nothing is hidden. It
  prefills ~40-token prompts for ~31 tokens each, the build ~130-token prompts for ~27, so
  it is the backend's decoding peak, not the build's workload;
- the share of each one's CPU time spent admitting rows (their prefill), the fraction of
  decode slots that produced a token (target >= 0.8: answers that end early must not leave
  the batch decoding padding), and the batch's occupancy (live rows over the batch size; the
  queue's tail runs part-empty).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import click
from bench_llm import batched_rate, generation_rate
from rich.console import Console
from rich.table import Table
from timed_build import data_sha, fresh_caches, measured_build, recorded_calls, timed_build

from labeler.llm import load_backend
from labeler.sources.registry import load_source


@click.command()
@click.option("--limit", default=32, show_default=True,
              help="Queries of the bundled sample: 32, so that the answers that run longest "
                   "(started first) end while the queue still refills the batch.")
@click.option("--repeats", default=3, show_default=True,
              help="Build and batched references, interleaved, this many times.")
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
            short = [generation_rate(backend, questions, batch_size=size)
                     for size in (backend.batch_size, 16)]
            with recorded_calls(backend) as calls:
                stats, version = measured_build(root / name, caches[name], limit=limit)
            shas.add(data_sha(version.glob("data-*.jsonl")))
            runs.append((stats, _own_prompts(backend, calls), *short))
    if not {one_sha} == {many_sha} == {cached_sha} == shas:
        raise SystemExit("the data differ between shard sizes: a bug, not a benchmark result")
    table = Table(title=f"labeler build, {limit} queries, whole processes (same data bytes)")
    for column in ("run", "seconds", "ratio"):
        table.add_column(column, justify="left" if column == "run" else "right")
    table.add_row("one shard of 256 (default)", f"{one:.1f}", "1.00")
    table.add_row("one query per shard", f"{many:.1f}", f"{many / one:.2f}")
    table.add_row("rerun, calls cached", f"{cached:.1f}", f"{cached / one:.2f}")
    Console().print(table)
    Console().print(_generation_table(runs, limit, backend.batch_size))


def _own_prompts(backend, calls: list):
    """bench_llm's batched generate over the build's own prompts and sampling (its recorded
    generate calls, asked in one plain call) at the build's batch size; its answers must be
    the build's."""
    samplings = {sampling for _, sampling, _ in calls}
    if len(samplings) != 1:
        raise SystemExit(f"the build's generate calls used {len(samplings)} samplings, not one")
    ran = batched_rate(backend, [p.chat for prompts, _, _ in calls for p in prompts],
                       samplings.pop(), batch_size=backend.batch_size)
    if ran.answers != [answers[i] for prompts, _, answers in calls for i in range(len(prompts))]:
        raise SystemExit("a plain generate answered the build's prompts otherwise: a bug")
    return ran


def _generation_table(runs: list, limit: int, batch: int) -> Table:
    """The build's generate calls against bench_llm's batched rate, in CPU time: on the build's
    own prompts at its batch size (the target: what scheduling costs), and on bench_llm's
    short questions at that size and at 16 rows; each repeat's ratios, and the medians."""
    stats = runs[-1][0]
    table = Table(title=f"the build's generation ({limit} queries, {stats.prompts} answers, "
                        f"one process, {len(runs)} repeats interleaved)")
    for column in ("measure", "value", "target"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    table.add_row("tokens generated", f"{stats.tokens:,}", "")
    table.add_row("CPU seconds inside generate", f"{stats.cpu_seconds:.1f}", "")
    ratios = []
    for r, (ran, *refs) in enumerate(runs, 1):
        ratios.append([ran.cpu_rate / ref.cpu_rate for ref in refs])
        own, short, wide = (f"{ref.cpu_rate:,.1f} = {x:.2f}" for ref, x in zip(refs, ratios[-1]))
        table.add_row(f"repeat {r}: build / batched tokens per CPU s (own prompts, {batch} rows; "
                      f"short questions, {batch} rows; 16 rows)",
                      f"{ran.cpu_rate:,.1f} / {own}; / {short}; / {wide}", "")
    own, short, wide = (statistics.median(x) for x in zip(*ratios))
    table.add_row(f"[bold]build / batched on its own prompts, {batch} rows (median)",
                  f"[bold]{own:.2f}", _verdict(own, 0.6))
    table.add_row(f"build / batched on 16 short questions, {batch} rows (median; the former "
                  "reference)", f"{short:.2f}", "")
    table.add_row("build / batched on 16 short questions, 16 rows (median)", f"{wide:.2f}", "")
    shares = (ran.prefill_share for ran in runs[-1][:3])
    table.add_row("CPU share admitting rows (prefill): build; own prompts; short questions",
                  "; ".join(f"{x:.0%}" for x in shares), "")
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
