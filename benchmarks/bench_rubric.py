"""Benchmark P(yes) with prefix reuse against independent prompts (not a test).

    python benchmarks/bench_rubric.py [--documents wands|cisi] [--products product.csv]
                                      [--questions 10] [--count 20] [--batch-size 10]

In one run on the same hf backend (the bundled SmolLM2-135M-Instruct): P(yes) for every
(document, question) of `--count` documents and `--questions` yes/no questions, through the
rubric task's document-first chat, once with the shared document prefix computed once per
document and once with every prompt whole. Prints both times and their ratio; target: reuse
<= 1/3 of the time, same P(yes) within 1e-4.

Documents: `wands` (the default) are WANDS-shaped, "{title}\n{description}" as the experiment
states a product: the rows of WANDS's `dataset/product.csv` given with `--products` (tab-
separated, its real layout), else the 10 real WANDS rows its read_dataset.ipynb displays
(tests/fixtures/wands_notebook_products.jsonl: names and descriptions cut at 50 characters,
so shorter than WANDS's own); `cisi` are the BM25 top CISI abstracts of cisi-sample's first
query.
"""

from __future__ import annotations

import os

# Before torch loads OpenMP: spinning worker threads starve each other on shared cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import csv
import json
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from labeler.llm import ChoiceRequest, load_backend
from labeler.retrieval.bm25 import bm25_run
from labeler.sources.registry import load_source
from labeler.tasks.rubric_judge import NO, YES, judge_prompt, p_yes

#: the real WANDS rows that WANDS's own notebook shows (see tests/fixtures/README.md)
NOTEBOOK_PRODUCTS = Path(__file__).parent.parent / "tests/fixtures/wands_notebook_products.jsonl"
#: yes/no questions of the kind the task's prompts make an LLM write for WANDS query 1,
#: "smart coffee table"
PRODUCT_QUESTIONS = (
    "Is the product a coffee table?",
    "Does the product have smart features such as charging or speakers?",
    "Does the product include built-in USB ports or wireless charging?",
    "Is the product living room furniture?",
    "Does the product have storage such as drawers or a lift top?",
    "Does the description mention a refrigerator or cooler?",
    "Does the product have LED lighting?",
    "Is the product a table rather than a chair or a bed?",
    "Does the product connect to a phone or an app?",
    "Is the product sold as a single table, not a set?",
)
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
@click.option("--documents", "kind", type=click.Choice(["wands", "cisi"]), default="wands",
              show_default=True, help="WANDS-shaped products or CISI abstracts.")
@click.option("--products", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="wands: WANDS's dataset/product.csv [default: the notebook's 10 rows].")
@click.option("--questions", default=10, show_default=True, help="Questions per document.")
@click.option("--count", default=20, show_default=True,
              help="Documents (at most the notebook's 10 without --products).")
@click.option("--batch-size", default=10, show_default=True, help="Rows per forward pass.")
@click.option("--device", help="cpu or cuda (default: cuda if available).")
def main(kind: str, products: Path | None, questions: int, count: int, batch_size: int,
         device: str | None) -> None:
    """P(yes) time with the shared document prefix computed once vs every prompt whole."""
    backend = load_backend("smollm2-135m", device=device, batch_size=batch_size,
                           use_cache=False)
    docs = _products(products, count) if kind == "wands" else _cisi(count)
    pool = PRODUCT_QUESTIONS if kind == "wands" else QUESTIONS
    asked = (pool * (questions // len(pool) + 1))[:questions]
    requests = [ChoiceRequest(judge_prompt(d, q), YES + NO) for d in docs for q in asked]
    backend.choice_probs(requests[:questions])  # warm-up
    timings = {}
    for reuse in (True, False):
        backend.prefix_reuse = reuse
        start = time.perf_counter()
        timings[reuse] = backend.choice_probs(requests), time.perf_counter() - start
    (shared, t_shared), (whole, t_whole) = timings[True], timings[False]
    worst = max(abs(p_yes(a) - p_yes(b)) for a, b in zip(shared, whole))
    table = Table(title=f"P(yes), {len(docs)} {kind} documents x {questions} questions, "
                        f"{backend.device.type}, batch {batch_size}")
    for column in ("prompts", "prefix reuse s", "independent s", "ratio", "max |ΔP(yes)|"):
        table.add_column(column, justify="right")
    ratio = t_shared / t_whole
    words = sum(len(d.split()) for d in docs) / len(docs)
    table.add_column("words / document", justify="right")
    table.add_row(str(len(requests)), f"{t_shared:.2f}", f"{t_whole:.2f}", f"{ratio:.3f}",
                  f"{worst:.1e}", f"{words:.0f}")
    Console().print(table)
    verdict = "meets" if ratio <= 1 / 3 else "misses"
    Console().print(f"prefix reuse takes {ratio:.1%} of the time: {verdict} the <= 1/3 target")


def _products(path: Path | None, count: int) -> list[str]:
    """The first `count` WANDS products as "{title}\n{description}" (the experiment's state):
    from product.csv's product_name and product_description, or the notebook's rows."""
    if path is None:
        with NOTEBOOK_PRODUCTS.open() as lines:
            rows = [json.loads(line) for line in lines][:count]
    else:
        with path.open(newline="") as f:
            rows = [row for _, row in zip(range(count), csv.DictReader(f, delimiter="\t"))]
    return [f"{r['product_name']}\n{r['product_description'] or ''}" for r in rows]


def _cisi(count: int) -> list[str]:
    """The BM25 top `count` CISI abstracts of cisi-sample's first query."""
    source = load_source("cisi-sample", limit=1)
    ranked = bm25_run(source.corpus, source.queries, k=count)[source.queries[0].qid]
    return [source.corpus[pid].contents for pid in ranked]


if __name__ == "__main__":
    main()
