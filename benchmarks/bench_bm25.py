"""Benchmark BM25 at corpus scale: the on-disk index's build time, build memory, size and
load time, and its query time against the full sort it replaced (not a test).

    python benchmarks/bench_bm25.py [--sizes 100000,1000000] [--today 100000] [--queries 100]
        [--k 20]

Everything is measured in one run on this machine. For each size, a FlashRAG corpus file of
generated passages (a 2-word title and 100 words, the words drawn with a fixed seed from the
bundled nq-sample corpus's words at their frequencies there) is read by the build's own path
(`labeler.sources.load_corpus`), then, each in a fresh child process:
- build: `open_index` into an empty cache: seconds, and the peak resident memory the build
  adds to the process holding the corpus (the peak is reset after the corpus is read, so
  the reading's own peak is not counted), per passage; the index's bytes on disk;
- load (a second run): `open_index` reading it back (the corpus fingerprint included), then
  the first `--queries` nq-sample questions ranked, top `--k`, by the index (scores of the
  query's terms, partial selection) and by today's path before the index (bm25s's scores
  over every passage, then a full stable argsort), checked equal, mean seconds a query.
`--today` sizes also build bm25s's in-memory index as `labeler` did before (whole corpus
tokenised in memory) for its peak per passage. Ends with the 21M-passage (wiki-dpr)
extrapolation of the largest size: passages x per-passage cost (targets: build at most
24 GiB, a query at most 0.1 s). Query time grows with the query terms' postings, so with
the corpus, here linearly (the words' frequencies do not change with the size); the
vocabulary of generated passages does not grow with the corpus, a real one's does (its
words and their ids are held in memory while building and loaded on every run).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import click
import numpy as np
from rich.console import Console
from rich.table import Table

#: wiki-dpr's passages, the extrapolation's scale, and the issue's targets
TARGET_PASSAGES = 21_015_324
TARGET_BUILD_BYTES, TARGET_QUERY_S = 24 << 30, 0.1
WORDS, TITLE_WORDS = 100, 2


def write_corpus(path: Path, size: int, seed: int = 0) -> None:
    """`size` generated passages as a FlashRAG corpus file."""
    from labeler.sources.registry import load_source

    counts = Counter(w for p in load_source("nq-sample").corpus.passages
                     for w in re.findall(r"\S+", p.contents))
    words = np.array(list(counts))
    freq = np.array(list(counts.values()), dtype=np.float64)
    rng = np.random.default_rng(seed)
    with path.open("w") as f:
        for start in range(0, size, 50_000):
            block = min(50_000, size - start)
            drawn = words[rng.choice(len(words), (block, TITLE_WORDS + WORDS),
                                     p=freq / freq.sum())]
            f.writelines(json.dumps({"id": str(start + i), "contents": (
                f'"{" ".join(row[:TITLE_WORDS])}"\n{" ".join(row[TITLE_WORDS:])}')}) + "\n"
                for i, row in enumerate(drawn.tolist()))


def _memory(field: str) -> int:
    """This process's VmRSS or VmHWM, in bytes."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE).group(1)) * 1024


def _reset_peak() -> None:
    """Reset this process's VmHWM to its current RSS (Linux: clear_refs 5)."""
    Path("/proc/self/clear_refs").write_text("5")


def child(mode: str, corpus_file: str, cache: str, queries: int, k: int) -> dict:
    """One measurement, in this (fresh) process: see the module's docstring. Everything is
    imported before the peak is reset: imports are not the build's memory."""
    import bm25s

    from labeler.retrieval.bm25 import open_index
    from labeler.sources.registry import load_corpus, load_source

    corpus = load_corpus(corpus_file)
    before = _memory("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    if mode == "today":
        tokens = bm25s.tokenize(corpus.contents(range(len(corpus))), stopwords="en",
                                show_progress=False)
        bm25s.BM25(k1=1.2, b=0.75, method="lucene").index(tokens, show_progress=False)
        return {"seconds": time.perf_counter() - start, "added": _memory("VmHWM") - before}
    index = open_index(corpus, cache_dir=cache)
    seconds = time.perf_counter() - start
    if mode == "build":
        return {"seconds": seconds, "added": _memory("VmHWM") - before,
                "disk": sum(p.stat().st_size for p in index.folder.iterdir())}
    questions = [q.question for q in load_source("nq-sample", limit=queries).queries]
    words = bm25s.tokenize(questions, stopwords="en", return_ids=False, show_progress=False)
    index.top(words[0], k)  # warm: the arrays' pages in the page cache, for both paths
    start = time.perf_counter()
    found = [index.top(w, k) for w in words]
    top_s = time.perf_counter() - start
    start = time.perf_counter()
    for terms, (positions, scores) in zip(words, found):
        known = [w for w in terms if w in index.model.vocab_dict]
        every = index.model.get_scores(known) if known else np.zeros(len(corpus), np.float32)
        order = np.argsort(-every, kind="stable")[:k]
        order = order[every[order] > 0]
        assert np.array_equal(order, positions) and np.array_equal(every[order], scores)
    return {"seconds": seconds, "query_s": top_s / len(words),
            "full_sort_s": (time.perf_counter() - start) / len(words)}


def _run(mode: str, corpus_file: Path, cache: Path, queries: int, k: int) -> dict:
    """`child` in a fresh process: its result."""
    result = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--corpus-file", str(corpus_file),
         "--cache", str(cache), "--queries", str(queries), "--k", str(k)],
        capture_output=True, text=True, check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if result.returncode:
        raise SystemExit(f"{mode} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.splitlines()[-1])


@click.command()
@click.option("--sizes", default="100000,1000000", show_default=True,
              help="Corpus sizes, in passages, comma-separated.")
@click.option("--today", default="100000", show_default=True,
              help="Sizes at which the in-memory bm25s index of before is built too.")
@click.option("--queries", default=100, show_default=True, help="nq-sample questions ranked.")
@click.option("--k", default=20, show_default=True)
@click.option("--child", "mode", type=click.Choice(["build", "load", "today"]), hidden=True)
@click.option("--corpus-file", hidden=True)
@click.option("--cache", hidden=True)
def main(sizes, today, queries, k, mode, corpus_file, cache) -> None:
    if mode:
        print(json.dumps(child(mode, corpus_file, cache, queries, k)))
        return
    console = Console(width=150)
    sizes = [int(s) for s in sizes.split(",")]
    today = {int(s) for s in today.split(",") if s}
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "corpus.jsonl"
            write_corpus(path, size)
            built = _run("build", path, Path(tmp) / "cache", queries, k)
            loaded = _run("load", path, Path(tmp) / "cache", queries, k)
            before = _run("today", path, Path(tmp) / "cache", queries, k) \
                if size in today else None
        rows.append((size, built, loaded, before))
        console.print(f"{size:,} passages: build {built}, load {loaded}, before {before}",
                      highlight=False)

    mib = 1 << 20
    table = Table(title=f"BM25 on generated {WORDS}-word passages: on-disk index; "
                        f"{queries} nq-sample questions, k = {k}")
    for column in ("passages", "build s", "build peak B / passage", "disk B / passage",
                   "load s", "query s (index)", "query s (full sort)", "speed-up",
                   "before: build peak B / passage", "before: build s"):
        table.add_column(column, justify="right")
    for size, built, loaded, before in rows:
        table.add_row(f"{size:,}", f"{built['seconds']:.1f}", f"{built['added'] / size:,.0f}",
                      f"{built['disk'] / size:,.0f}", f"{loaded['seconds']:.2f}",
                      f"{loaded['query_s']:.4f}", f"{loaded['full_sort_s']:.4f}",
                      f"{loaded['full_sort_s'] / loaded['query_s']:.1f}x",
                      f"{before['added'] / size:,.0f}" if before else "-",
                      f"{before['seconds']:.1f}" if before else "-")
    console.print(table)

    size, built, loaded, _ = rows[-1]
    scale = TARGET_PASSAGES / size
    peak, query = built["added"] * scale, loaded["query_s"] * scale
    console.print(
        f"{TARGET_PASSAGES:,} passages (wiki-dpr), from {size:,}: build {built['seconds'] * scale / 3600:.1f} h, "
        f"peak +{peak / (1 << 30):.1f} GiB (target {TARGET_BUILD_BYTES >> 30} GiB), disk "
        f"{built['disk'] * scale / (1 << 30):.1f} GiB, load {loaded['seconds'] * scale:.0f} s, "
        f"a query {query:.3f} s (target {TARGET_QUERY_S} s; the full sort "
        f"{loaded['full_sort_s'] * scale:.2f} s); build peak at {size:,}: "
        f"+{built['added'] / mib:,.0f} MiB.", highlight=False)
    if peak > TARGET_BUILD_BYTES or query > TARGET_QUERY_S:
        raise SystemExit("missed a target")


if __name__ == "__main__":
    main()
