"""Benchmark what `labeler`'s start-up costs a user: each command's `--help` in a fresh Python,
as CPU time (user + system of the child) over `python -c pass`, best of --runs, and which heavy
libraries it imported.

Usage: python benchmarks/bench_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys

from rich.console import Console
from rich.table import Table

COMMANDS = [[], ["build"], ["score"], ["judge"], ["retrieve"], ["reproduce"], ["validate"]]
HEAVY = ("torch", "transformers", "datasets", "numpy", "polars", "pyarrow", "huggingface_hub")
#: runs `labeler ARGS --help` as the console script does, then names the heavy modules loaded
PROBE = ("import sys; sys.argv = ['labeler', *sys.argv[1:], '--help']\n"
         "from labeler.cli import main\n"
         "try:\n    main()\nexcept SystemExit:\n    pass\n"
         "print(' '.join(m for m in {heavy} if m in sys.modules), file=sys.stderr)")


def cpu_seconds(argv: list[str]) -> tuple[float, str]:
    """The CPU time (user + system) of running `argv` to its end, and what it wrote on stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, check=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
            done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "")


def main(runs: int) -> None:
    base = min(cpu_seconds([sys.executable, "-c", "pass"])[0] for _ in range(runs))
    table = Table(title=f"start-up CPU time, best of {runs}, over `python -c pass` "
                        f"({base * 1000:.0f} ms)")
    for column in ("command", "CPU ms", "× python -c pass", "heavy modules imported"):
        table.add_column(column, justify="left" if column[0] in "ch" else "right")
    probe = PROBE.format(heavy=HEAVY)
    for args in COMMANDS:
        timed = [cpu_seconds([sys.executable, "-c", probe, *args]) for _ in range(runs)]
        best = min(seconds for seconds, _ in timed)
        table.add_row(" ".join(["labeler", *args, "--help"]), f"{best * 1000:.0f}",
                      f"{best / base:.1f}", timed[0][1] or "none")
    Console().print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    main(parser.parse_args().runs)
