"""Benchmark the memory and CPU of reading a big FlashRAG corpus through the build's own path,
beside `datasets` reading the same file (not a test).

    python benchmarks/bench_corpus_load.py [--passages 1000000] [--small 100000]

Writes, in a temp folder, a FlashRAG corpus of `--passages` generated 100-word passages (words
drawn with a fixed seed from the bundled nq-sample corpus's vocabulary, titles likewise), 100
nq-sample questions as a FlashRAG dataset, and a TREC run naming 20 random passages for each.
Then, each as a whole child process (imports included), measures peak RSS and CPU of:
- labeler, first run: `load_source("jsonl:…", corpus=FILE)` and `build_pools(…, run=RUN)`,
  which stores the corpus as an on-disk table; and a second run, which maps it;
- `datasets.load_dataset("json", data_files=FILE)`: first (converts to Arrow) and cached.
Targets (issue 20): labeler's peak ≤ 1.5× datasets' cached reload, its second run's CPU
≤ 3× datasets' cached reload, ≤ 200 B of RSS a passage. The same is run at `--small`
passages, and the slope between the two sizes extrapolates the peak to 21M (DPR's
psgs_w100), 34M (the paper's kilt-w100) and 100M (KILT's paragraphs).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

PEAK_RATIO, CPU_RATIO, BYTES_A_PASSAGE = 1.5, 3.0, 200
SCALES = {"21M (wiki-dpr)": 21_015_324, "34M (kilt-w100)": 34_000_000,
          "100M (KILT paragraphs)": 100_000_000}

LABELER = """
import sys
from labeler.retrieval import build_pools
from labeler.sources.registry import load_source
source = load_source("jsonl:" + sys.argv[1], corpus=sys.argv[2])
pools = build_pools(source, pool="rp", k=20, run=sys.argv[3])
assert len(pools) == len(source.queries) and all(len(p) == 20 for p in pools.values())
""" + "print(open('/proc/self/status').read())"
DATASETS = """
import sys
import datasets
datasets.disable_progress_bars()
corpus = datasets.load_dataset("json", data_files=sys.argv[2], split="train")
assert len(corpus) > 0
""" + "print(open('/proc/self/status').read())"


def write_data(folder: Path, passages: int, seed: int = 0) -> tuple[Path, Path, Path]:
    """(dataset, corpus, run) files in `folder`: `passages` generated passages."""
    rng = np.random.default_rng(seed)
    sample = Path(str(files("labeler") / "data" / "nq_sample"))
    with gzip.open(sample / "corpus.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f]
    vocabulary = sorted({w for r in rows for w in r["text"].split()})
    titles = sorted({r["title"] for r in rows})
    corpus = folder / "corpus.jsonl"
    with corpus.open("w") as out:
        for start in range(0, passages, 10_000):
            count = min(10_000, passages - start)
            words = rng.integers(0, len(vocabulary), (count, 100)).tolist()
            names = rng.integers(0, len(titles), count).tolist()
            out.writelines(json.dumps({"id": str(start + i), "contents": f'"{titles[names[i]]}"'
                                       + "\n" + " ".join(vocabulary[w] for w in words[i])}) + "\n"
                           for i in range(count))
    with gzip.open(sample / "queries.jsonl.gz", "rt") as f:
        queries = [json.loads(line) for line in f][:100]
    dataset, run = folder / "queries.jsonl", folder / "run.trec"
    dataset.write_text("".join(json.dumps({"id": q["qid"], "question": q["question"],
                                           "golden_answers": q["answers"]}) + "\n"
                               for q in queries))
    with run.open("w") as out:
        for q in queries:
            pids = rng.choice(passages, 20, replace=False)
            out.writelines(f"{q['qid']} Q0 {p} {r} {20 - r} gen\n" for r, p in enumerate(pids, 1))
    return dataset, corpus, run


def peak(code: str, args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(CPU seconds, peak RSS bytes) of `python -c code args` as a child process: its CPU from
    wait4, its peak from its own VmHWM (ru_maxrss would carry this parent's over the exec)."""
    child = subprocess.Popen([sys.executable, "-c", code, *args], env={**os.environ, **env},
                             stdout=subprocess.PIPE, text=True)
    status = child.stdout.read()
    _, code_, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(code_):
        raise SystemExit(f"the child process failed ({code.splitlines()[1]} …)")
    hwm = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return usage.ru_utime + usage.ru_stime, int(hwm.split()[1]) * 1024  # kB


def measure(passages: int) -> dict[str, tuple[float, int]]:
    """Each reader's (CPU s, peak RSS) on `passages` generated passages, first and cached."""
    with tempfile.TemporaryDirectory() as tmp:
        dataset, corpus, run = write_data(Path(tmp), passages)
        env = {"HF_HUB_OFFLINE": "1", "LABELER_CACHE_DIR": f"{tmp}/labeler",
               "HF_DATASETS_CACHE": f"{tmp}/datasets", "LABELER_QUIET": "1"}
        args = [str(dataset), str(corpus), str(run)]
        return {"labeler, first run": peak(LABELER, args, env),
                "labeler, second run": peak(LABELER, args, env),
                "datasets json, first": peak(DATASETS, args, env),
                "datasets json, cached": peak(DATASETS, args, env)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=100_000)
    args = parser.parse_args()
    start = time.perf_counter()
    small, big = measure(args.small), measure(args.passages)
    mib = 1 << 20
    cached_cpu, cached_rss = big["datasets json, cached"]
    table = Table(title=f"Reading a {args.passages:,}-passage FlashRAG corpus and pooling 100 "
                        f"queries from a run (whole processes; {time.perf_counter() - start:.0f} "
                        "s in all)")
    for column in ("reader", "CPU s", "peak RSS MiB", "× datasets cached (RSS)",
                   "× datasets cached (CPU)",
                   f"RSS B / passage, {args.small:,} → {args.passages:,}"):
        table.add_column(column, justify="left" if column == "reader" else "right")
    for name, (cpu, rss) in big.items():
        slope = (rss - small[name][1]) / (args.passages - args.small)
        table.add_row(name, f"{cpu:.2f}", f"{rss / mib:,.0f}", f"{rss / cached_rss:.2f}",
                      f"{cpu / cached_cpu:.2f}", f"{slope:,.0f}")
    console = Console()
    console.print(table)
    scale = Table(title="Labeler's peak RSS extrapolated (the first run's slope per passage)")
    scale.add_column("corpus")
    scale.add_column("peak RSS GiB", justify="right")
    first_small, first_big = small["labeler, first run"][1], big["labeler, first run"][1]
    slope = (first_big - first_small) / (args.passages - args.small)
    for name, size in SCALES.items():
        scale.add_row(name, f"{(first_big + slope * (size - args.passages)) / (1 << 30):.1f}")
    console.print(scale)
    worst = max(rss for name, (_, rss) in big.items() if name.startswith("labeler"))
    second_cpu = big["labeler, second run"][0]
    console.print(f"targets: peak ≤ {PEAK_RATIO}× datasets' cached reload: "
                  f"{worst / cached_rss:.2f}×; second run's CPU ≤ {CPU_RATIO}×: "
                  f"{second_cpu / cached_cpu:.2f}×; ≤ {BYTES_A_PASSAGE} B a passage: "
                  f"{slope:,.0f} B")


if __name__ == "__main__":
    main()
