"""Benchmark two checks on a build's hot path, as CPU time in one run, old way over new:

- a record's schema check: `labeler.schemas.check` (the compiled schema) against jsonschema's
  full validation that collects and sorts every problem (what `check` ran before), on the
  bundled utility records;
- a run file's pools: `build_pools` (`--run`, k = 20, mcp) over nq-sample's stored corpus,
  against reading each ranked passage one pid at a time (what the pools did before).

Usage: python benchmarks/bench_checks.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from labeler.lines import read_jsonl
from labeler.retrieval.pools import _Lookup, build_pools
from labeler.schemas import check, schema_problems
from labeler.sources.registry import load_source

RECORDS = Path(__file__).parents[1] / "tests" / "artifacts" / "fixtures" / \
    "utility_nq_sample_smollm2.jsonl"


def cpu_ms(fn, repeat: int) -> float:
    """CPU milliseconds of one `fn()`, over `repeat` calls."""
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) * 1000 / repeat


def schema_rows(repeat: int) -> tuple[float, float]:
    records = [record for _, record in read_jsonl(RECORDS)]
    check(records[0], "utility")  # compile and load once, outside the timing
    schema_problems(records[0], "utility")
    new = cpu_ms(lambda: [check(r, "utility") for r in records], repeat) / len(records)
    old = cpu_ms(lambda: [schema_problems(r, "utility") for r in records], repeat) / len(records)
    return old, new


def pool_rows(repeat: int, folder: Path) -> tuple[float, float, int]:
    source = load_source("nq-sample")
    pids = source.corpus.pids(range(len(source.corpus)))
    rng, run = random.Random(0), folder / "run.trec"
    ranked = {q.qid: rng.sample(pids, 20) for q in source.queries}
    run.write_text("".join(f"{qid} Q0 {pid} {r} {1 / r:.4f} bench\n"
                           for qid, ranked_pids in ranked.items()
                           for r, pid in enumerate(ranked_pids, 1)))
    lookup = _Lookup(source)
    rounds = max(1, repeat // 50)
    new = cpu_ms(lambda: build_pools(source, pool="mcp", k=20, run=str(run)), rounds)
    reads = cpu_ms(lambda: [lookup.get_many(p) for p in ranked.values()], rounds)
    one_by_one = cpu_ms(lambda: [[lookup[pid] for pid in p for _ in (0, 1)]
                                 for p in ranked.values()], rounds)  # each read twice, as before
    queries = len(source.queries)
    return (new - reads + one_by_one) / queries, new / queries, queries


def main(repeat: int) -> None:
    table = Table(title="hot-path checks, CPU ms (one run)")
    for column in ("what", "before", "now", "before / now"):
        table.add_column(column, justify="left" if column == "what" else "right")
    old, new = schema_rows(repeat)
    table.add_row("schema check, a utility record", f"{old:.3f}", f"{new:.3f}",
                  f"{old / new:.1f}x")
    with tempfile.TemporaryDirectory() as folder:
        old, new, queries = pool_rows(repeat, Path(folder))
    table.add_row(f"run-file pools (k 20, mcp), a query of {queries}", f"{old:.3f}",
                  f"{new:.3f}", f"{old / new:.1f}x")
    Console().print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    main(parser.parse_args().repeat)
