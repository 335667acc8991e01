"""Labeler's own CPU cost a call: a real utility build (real run-file pools, call cache and
writer) whose backend answers at once (not a test).

    python benchmarks/bench_overhead.py [--sizes 1000,5000] [--k 20]

NQ-shaped synthetic data (a `jsonl:` set of N questions, a FlashRAG `--corpus`, a TREC `--run`
of k passages a query, a third of them holding the gold answer) is built with the backends of
`instant_backend.py`, registered as backends: `instant` renders and tokenizes with the bundled
SmolLM2's chat template and tokenizer, `instant-text` joins messages and splits words. The
process's CPU time for the whole build (every thread), over the calls the backend answered, is
labeler's cost a call. Targets (issue 33): <= 0.5 ms a call with the tokenizer, <= 0.1 ms
without it, and growth from the smallest size to the largest <= 1.1x.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

import click
from instant_backend import register
from rich.console import Console
from rich.table import Table

from labeler.executors import load_executor
from labeler.llm.config import LLMConfig
from labeler.tasks import load_task
from labeler.workflows.build import build

#: common English words, about a token each in SmolLM2's tokenizer: a 100-word passage is
#: NQ-sized, and 20 of them fit the context window as the real ones do
WORDS = ["the", "of", "and", "to", "in", "is", "was", "for", "on", "as", "with", "by", "he", "it",
         "at", "from", "his", "an", "were", "are", "which", "this", "be", "or", "has", "had",
         "first", "one", "their", "its", "new", "after", "who", "they", "have", "her", "she",
         "two", "been", "other", "when", "there", "all", "during", "into", "school", "time",
         "may", "years", "more", "most", "only", "over", "city", "some", "world", "would",
         "where", "later", "up", "such", "used", "many", "can", "state", "about", "national",
         "out", "known", "university", "united", "then", "made", "team", "film", "these",
         "between", "high", "under", "while", "war", "world", "series", "born", "season", "early",
         "three", "south", "north", "house", "game", "since", "river", "music", "part", "people",
         "water", "name", "number", "book", "album", "song", "church", "population", "village",
         "family", "station", "league", "against", "county"]


def synthetic(folder: Path, queries: int, k: int, seed: int = 0) -> dict[str, str]:
    """A `jsonl:` set, a FlashRAG corpus (k passages a query, ~100 words each) and a TREC run of
    k passages a query; the options that name them."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "set.jsonl", "w") as data, open(folder / "corpus.jsonl", "w") as corpus, \
            open(folder / "run.trec", "w") as run:
        for q in range(queries):
            answer = f"ans{q}"
            question = " ".join(rng.choices(WORDS, k=9))
            data.write(json.dumps({"id": f"q{q}", "question": question,
                                   "golden_answers": [answer]}) + "\n")
            for rank in range(k):
                words = rng.choices(WORDS, k=100)
                if rank % 3 == 0:
                    words[rng.randrange(100)] = answer
                pid = f"{q}-{rank}"
                corpus.write(json.dumps({"id": pid, "contents": f'"T{pid}"\n' + " ".join(words)})
                             + "\n")
                run.write(f"q{q} Q0 {pid} {rank + 1} {1 - rank / k:.4f} synthetic\n")
    return {"dataset": f"jsonl:{folder / 'set.jsonl'}", "corpus": str(folder / "corpus.jsonl"),
            "run": str(folder / "run.trec")}


def measured(root: Path, data: dict[str, str], k: int, backend: str, tag: str
             ) -> tuple[float, int]:
    """(CPU seconds of this process, calls answered) for one fresh build."""
    task = load_task("utility")
    config = task.Config(k=k, **data)
    llm = LLMConfig("smollm2-135m", backend=backend)
    executor = load_executor("local")
    from labeler.llm import load_backend

    inner = load_backend("smollm2-135m", backend=backend, use_cache=False)
    before = inner.answered
    start = time.process_time()
    build("utility", config, [llm], out=root / f"out-{tag}", cache_dir=root / f"cache-{tag}",
          executor=executor)
    return time.process_time() - start, inner.answered - before


@click.command()
@click.option("--sizes", default="1000,5000", show_default=True, help="Queries, comma-separated.")
@click.option("--k", default=20, show_default=True, help="Passages a query in the run.")
def main(sizes: str, k: int) -> None:
    register()
    counts = [int(n) for n in sizes.split(",")]
    table = Table(title=f"labeler's CPU a call: utility build, run-file pools, k {k}, "
                        "a backend that answers at once")
    for column in ("backend", "queries", "calls", "CPU s", "ms a call", "calls/s a core",
                   "growth", "target"):
        table.add_column(column, justify="left" if column == "backend" else "right")
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        root = Path(tmp)
        data = {n: synthetic(root / f"data-{n}", n, k) for n in counts}
        for backend, target in (("instant", 0.5), ("instant-text", 0.1)):
            first = None
            for n in counts:
                seconds, calls = measured(root, data[n], k, backend, f"{backend}-{n}")
                per_call = seconds / calls * 1000
                first = first or per_call
                table.add_row(backend + (" (SmolLM2 tokenizer)" if backend == "instant" else
                                         " (no tokenizer)"), f"{n:,}", f"{calls:,}",
                              f"{seconds:.1f}", f"{per_call:.3f}", f"{1000 / per_call:,.0f}",
                              f"{per_call / first:.2f}x", f"<= {target} ms, <= 1.1x")
    Console(width=130).print(table)


if __name__ == "__main__":
    main()
