"""Labeler's own CPU cost a call on the bundled NQ sample's real text: a real utility build
(real run-file pools, call cache and writer) whose backend answers at once (not a test).

    python benchmarks/bench_overhead.py [--sizes 1000,3000] [--k 20]

Each query of an N-query `jsonl:` set takes one of nq-sample's 300 real questions in turn and
k of its 4,349 real passages at random (`--corpus`, a FlashRAG file; `--run`, a TREC run of k
passages a query); a third of them hold the query's answer word, the others its mark (`q7`),
so that no passage text recurs across queries, as few do in a corpus of millions. It is built with the backends
of `instant_backend.py`, registered as backends: `instant` renders and tokenizes with the
bundled SmolLM2's chat template and tokenizer, `instant-text` joins messages and splits words.
The process's CPU time for the whole build (every thread) is measured at two sizes: the
difference over the difference in calls answered is labeler's marginal cost a call, start-up
excluded. The floor is what encoding each prompt whole costs (the same prompts, the same
tokenizer, in this process): no implementation that tokenizes every prompt whole spends less.
Targets (issue 47): `instant` <= 0.6x the floor, and <= 0.5 ms a call on a quiet core.
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
from labeler.llm.prompts import _whole_encoder
from labeler.sources import load_source
from labeler.tasks import load_task
from labeler.workflows.build import build

#: prompts whose whole encoding is timed for the floor (a sample of the smaller build's)
FLOOR_PROMPTS = 10_000


def synthetic(folder: Path, queries: int, k: int, seed: int = 0) -> dict[str, str]:
    """A `jsonl:` set of nq-sample's real questions (in turn), a FlashRAG corpus of k of its
    real passages a query (drawn at random; the answer word or the query's mark put in) and a
    TREC run of them; the options that name them."""
    rng = random.Random(seed)
    sample = load_source("nq-sample")
    questions = [q.question for q in sample.queries]
    passages = sample.corpus.passages
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "set.jsonl", "w") as data, open(folder / "corpus.jsonl", "w") as corpus, \
            open(folder / "run.trec", "w") as run:
        for q in range(queries):
            answer = f"ans{q}"
            data.write(json.dumps({"id": f"q{q}", "question": questions[q % len(questions)],
                                   "golden_answers": [answer]}) + "\n")
            for rank, row in enumerate(rng.sample(range(len(passages)), k)):
                passage = passages[row]
                words = passage.text.split(" ")  # the answer, or the query's mark, put in:
                # a passage's text is its query's own, as in a corpus of millions
                words.insert(rng.randrange(len(words)), answer if rank % 3 == 0 else f"q{q}")
                pid = f"{q}-{rank}"
                corpus.write(json.dumps({"id": pid, "contents": f'"{passage.title}"\n'
                                                                + " ".join(words)}) + "\n")
                run.write(f"q{q} Q0 {pid} {rank + 1} {1 - rank / k:.4f} nq-sample\n")
    return {"dataset": f"jsonl:{folder / 'set.jsonl'}", "corpus": str(folder / "corpus.jsonl"),
            "run": str(folder / "run.trec")}


def measured(root: Path, data: dict[str, str], k: int, backend: str, tag: str,
             keep: list[str] | None = None) -> tuple[float, int]:
    """(CPU seconds of this process, calls answered) for one fresh build; the prompts' texts
    appended to `keep` when given."""
    task = load_task("utility")
    config = task.Config(k=k, **data)
    llm = LLMConfig("smollm2-135m", backend=backend)
    executor = load_executor("local")
    from labeler.llm import load_backend

    inner = load_backend("smollm2-135m", backend=backend, use_cache=False)
    before, inner.kept = inner.answered, keep
    start = time.process_time()
    build("utility", config, [llm], out=root / f"out-{tag}", cache_dir=root / f"cache-{tag}",
          executor=executor)
    return time.process_time() - start, inner.answered - before


def floor(texts: list[str], count: int) -> tuple[float, float]:
    """(CPU seconds a prompt, tokens a prompt) of encoding `count` of `texts` (drawn at
    random) each whole with SmolLM2's tokenizer, as `labeler.llm.prompts.encode` calls it, in
    batches of 256."""
    from labeler.llm import load_backend

    whole = _whole_encoder(load_backend("smollm2-135m", backend="instant",
                                        use_cache=False).tokenizer)
    drawn = random.Random(0).sample(texts, min(count, len(texts)))
    start = time.process_time()
    tokens = sum(len(ids) for n in range(0, len(drawn), 256) for ids in whole(drawn[n:n + 256]))
    return (time.process_time() - start) / len(drawn), tokens / len(drawn)


@click.command()
@click.option("--sizes", default="300,900", show_default=True,
              help="Queries of the two builds, comma-separated.")
@click.option("--k", default=20, show_default=True, help="Passages a query in the run.")
def main(sizes: str, k: int) -> None:
    register()
    small, large = (int(n) for n in sizes.split(","))
    table = Table(title=f"labeler's CPU a call: utility build on nq-sample's real text, "
                        f"run-file pools, k {k}, a backend that answers at once")
    for column in ("backend", f"CPU s, {small:,} q", f"CPU s, {large:,} q", "marginal calls",
                   "marginal ms a call", "x floor", "target"):
        table.add_column(column, justify="left" if column == "backend" else "right")
    texts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        root = Path(tmp)
        data = {n: synthetic(root / f"data-{n}", n, k) for n in (small, large)}
        rows = []
        for backend in ("instant", "instant-text"):
            (cpu_small, calls_small), (cpu_large, calls_large) = (
                measured(root, data[n], k, backend, f"{backend}-{n}",
                         keep=texts if backend == "instant" and n == small else None)
                for n in (small, large))
            rows.append((backend, cpu_small, cpu_large, calls_large - calls_small,
                         (cpu_large - cpu_small) / (calls_large - calls_small) * 1000))
    per_prompt, tokens = floor(texts, FLOOR_PROMPTS)
    for backend, cpu_small, cpu_large, calls, per_call in rows:
        table.add_row(backend + (" (SmolLM2 tokenizer)" if backend == "instant" else
                                 " (no tokenizer)"), f"{cpu_small:.1f}", f"{cpu_large:.1f}",
                      f"{calls:,}", f"{per_call:.3f}", f"{per_call / (per_prompt * 1000):.2f}x",
                      "<= 0.6x floor" if backend == "instant" else "")
    table.add_row("floor: each prompt encoded whole", "", "", f"{min(len(texts), FLOOR_PROMPTS):,}",
                  f"{per_prompt * 1000:.3f}", "1.00x", "")
    Console(width=140).print(table)
    print(f"{tokens:.0f} tokens a prompt (SmolLM2), {len(texts):,} prompts in the "
          f"{small:,}-query build; headline: instant / floor = "
          f"{rows[0][4] / (per_prompt * 1000):.2f}")


if __name__ == "__main__":
    main()
