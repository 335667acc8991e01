"""Benchmark P(yes) with prefix reuse against independent prompts (not a test).

    python benchmarks/bench_rubric.py [--questions 10] [--documents 20] [--batch-size 10]

In one run on the same hf backend (the bundled SmolLM2-135M-Instruct): P(yes) for every
(document, question) of the BM25 top `--documents` CISI documents of one cisi-sample query and
`--questions` yes/no questions, through the rubric task's document-first chat, once with the
shared document prefix computed once per document and once with every prompt whole. Prints
both times and their ratio; target: reuse <= 1/3 of the time, same P(yes) within 1e-4.
"""

from __future__ import annotations

import os

# Before torch loads OpenMP: spinning worker threads starve each other on shared cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import time

import click
from rich.console import Console
from rich.table import Table

from labeler.llm import ChoiceRequest, load_backend
from labeler.retrieval.bm25 import bm25_run
from labeler.sources.registry import load_source
from labeler.tasks.rubric import NO, YES, judge_prompt, p_yes

#: yes/no questions of the kind the task's prompts make an LLM write for CISI query 1
QUESTIONS = (
    "Does the document discuss how descriptive titles are written?",
    "Does the document report problems in making up titles?",
    "Does the document describe retrieving articles from their titles?",
    "Does the document study automatic retrieval from approximate titles?",
    "Does the document compare article content with article titles?",
    "Does the document measure how relevant titles are to content?",
    "Does the document discuss indexing based on titles?",
    "Does the document evaluate keyword-in-context or title indexes?",
    "Does the document address how users judge relevance from titles?",
    "Does the document concern information retrieval systems?",
)


@click.command()
@click.option("--questions", default=10, show_default=True, help="Questions per document.")
@click.option("--documents", default=20, show_default=True, help="BM25 top documents.")
@click.option("--batch-size", default=10, show_default=True, help="Rows per forward pass.")
@click.option("--device", help="cpu or cuda (default: cuda if available).")
def main(questions: int, documents: int, batch_size: int, device: str | None) -> None:
    """P(yes) time with the shared document prefix computed once vs every prompt whole."""
    backend = load_backend("smollm2-135m", device=device, batch_size=batch_size,
                           use_cache=False)
    source = load_source("cisi-sample", limit=1)
    ranked = bm25_run(source.corpus, source.queries, k=documents)[source.queries[0].qid]
    docs = [source.corpus[pid].contents for pid in ranked]
    asked = (QUESTIONS * (questions // len(QUESTIONS) + 1))[:questions]
    requests = [ChoiceRequest(judge_prompt(d, q), YES + NO) for d in docs for q in asked]
    backend.choice_probs(requests[:questions])  # warm-up
    timings = {}
    for reuse in (True, False):
        backend.prefix_reuse = reuse
        start = time.perf_counter()
        timings[reuse] = backend.choice_probs(requests), time.perf_counter() - start
    (shared, t_shared), (whole, t_whole) = timings[True], timings[False]
    worst = max(abs(p_yes(a) - p_yes(b)) for a, b in zip(shared, whole))
    table = Table(title=f"P(yes), {len(docs)} documents x {questions} questions, "
                        f"{backend.device.type}, batch {batch_size}")
    for column in ("prompts", "prefix reuse s", "independent s", "ratio", "max |ΔP(yes)|"):
        table.add_column(column, justify="right")
    ratio = t_shared / t_whole
    table.add_row(str(len(requests)), f"{t_shared:.2f}", f"{t_whole:.2f}", f"{ratio:.3f}",
                  f"{worst:.1e}")
    Console().print(table)
    verdict = "meets" if ratio <= 1 / 3 else "misses"
    Console().print(f"prefix reuse takes {ratio:.1%} of the time: {verdict} the <= 1/3 target")


if __name__ == "__main__":
    main()
