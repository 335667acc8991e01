"""Benchmark the peak memory of `labeler score` on a 50 MB ranking file, as a ratio to its size.

    python benchmarks/bench_memory.py [--queries 150000] [--candidates 20]

Writes, in a temp folder, a JSONL ranking `{qid, scores: {pid: score}}` shaped like an MS MARCO
passage run (qids drawn from the dev query-id range, pids from the 8,841,823 passage ids,
scores with 2 decimals, so ties occur) and TREC qrels with one or two relevant passages per
query, about half of them retrieved. Then runs `labeler score RUN --against QRELS --json` as a
whole process and reports its peak resident memory (the interpreter and imports included)
over the file size, and its wall and CPU time. Target: at most 4x the file.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: MS MARCO passage ranking: dev query ids lie below this; passage ids are 0 .. 8,841,822
QID_RANGE, PASSAGES = 1_102_400, 8_841_823
TARGET = 4.0


def write_data(folder: Path, queries: int, candidates: int) -> tuple[Path, Path]:
    rng = random.Random(0)
    run, qrels = folder / "run.jsonl", folder / "qrels.txt"
    with run.open("w") as r, qrels.open("w") as q:
        for qid in rng.sample(range(QID_RANGE), queries):
            pids = rng.sample(range(PASSAGES), candidates)
            scores = ", ".join(f'"{p}": {rng.uniform(5, 30):.2f}' for p in pids)
            r.write(f'{{"qid": "{qid}", "scores": {{{scores}}}}}\n')
            relevant = rng.sample(pids, 1) if rng.random() < 0.5 else []
            unretrieved = rng.choice((1, 1, 2)) - len(relevant)
            relevant += [rng.randrange(PASSAGES) for _ in range(unretrieved)]
            q.writelines(f"{qid} 0 {p} 1\n" for p in relevant)
    return run, qrels


def peak(command: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in bytes) of `command` run as a child process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=150_000)
    parser.add_argument("--candidates", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run, qrels = write_data(Path(tmp), args.queries, args.candidates)
        size = run.stat().st_size
        seconds, cpu, rss = peak([sys.executable, "-m", "labeler", "-q", "score", str(run),
                                  "--against", str(qrels), "--json"])
    mib = 1 << 20
    ratio = rss / size
    print(f"score {args.queries:,} queries x {args.candidates} ({size / mib:.1f} MiB JSONL run) "
          f"against qrels: {seconds:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss / mib:.0f} MiB = "
          f"{ratio:.2f}x the file (target {TARGET:g}x)")
    if ratio > TARGET:
        raise SystemExit(f"missed the target: {ratio:.2f}x > {TARGET:g}x")


if __name__ == "__main__":
    main()
