"""Benchmark loading the bundled model as whole processes: first load (GGUF conversion) vs second.

Each round makes a fresh cache folder and runs LOAD twice on it, each a fresh `python -c` that
imports labeler, calls `labeler.llm.load_backend("smollm2-135m", cache_dir=...)` and answers
PROMPT greedily (no call cache, so the model itself answers both times): the first process
converts the .gguf into a transformers folder under the cache, the second loads that folder.
A third process per round only imports the hf backend (torch and transformers): the floor of
any load. Prints the best wall and CPU seconds of each over the rounds, the second / first
ratio (target <= 0.25), and checks that every run answered the same.

Usage: python benchmarks/bench_load.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

PROMPT = "What is the capital of France? Answer in one sentence."

LOAD = f"""\
import sys
from labeler.llm import Sampling, chat, load_backend

backend = load_backend("smollm2-135m", cache_dir=sys.argv[1], use_cache=False)
print(backend.generate([chat({PROMPT!r})], Sampling(max_tokens=24))[0][0].text)
"""

IMPORT = "import labeler.llm.hf"


def run(code: str, *args: str) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of `python -c code args`."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    start, start_cpu = time.perf_counter(), usage.ru_utime + usage.ru_stime
    # no hints on stderr, nothing reaches for the network, and torch's idle threads sleep as
    # under the `labeler` command (labeler.cli sets OMP_WAIT_POLICY before torch loads)
    env = os.environ | {"LABELER_QUIET": "1", "HF_HUB_OFFLINE": "1",
                        "OMP_WAIT_POLICY": "PASSIVE"}
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True,
                         text=True, env=env).stdout
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.perf_counter() - start, usage.ru_utime + usage.ru_stime - start_cpu,
            out.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    wall: dict[str, list[float]] = {"first": [], "second": [], "import": []}
    cpu: dict[str, list[float]] = {name: [] for name in wall}
    answers = set()
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="bench-load-") as cache:
            for name in ("first", "second"):
                seconds, cpu_seconds, answer = run(LOAD, cache)
                wall[name].append(seconds)
                cpu[name].append(cpu_seconds)
                answers.add(answer)
        seconds, cpu_seconds, _ = run(IMPORT)
        wall["import"].append(seconds)
        cpu["import"].append(cpu_seconds)
    if len(answers) != 1:
        raise SystemExit(f"the loads answered differently: {sorted(answers)}")
    print(f"smollm2-135m, whole processes, best of {args.rounds} rounds (fresh cache each)")
    print(f"  {'':<38} {'wall':>8} {'cpu':>8}")
    for name, label in (("first", "first load (GGUF conversion) + answer"),
                        ("second", "second load (converted folder) + answer"),
                        ("import", "import torch + transformers only")):
        print(f"  {label:<38} {min(wall[name]):7.2f}s {min(cpu[name]):7.2f}s")
    for clock, times in (("wall", wall), ("CPU", cpu)):
        print(f"second / first ({clock}): {min(times['second']) / min(times['first']):.2f} "
              "(target <= 0.25)")
    print(f"same answer every time: {next(iter(answers))!r}")


if __name__ == "__main__":
    main()
