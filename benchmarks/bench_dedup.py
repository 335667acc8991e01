"""Benchmark SEER's de-duplication of one query's samples (not a test).

    python benchmarks/bench_dedup.py [--samples 10] [--chars 1000] [--queries 20]

Each query has `--samples` extractions of about `--chars` characters (SEER's M = 10 samples of
up to 256 tokens), cut from the bundled nq-sample passages, in three shapes: distinct windows
(the usual case: the length and LCS bounds settle most pairs), variants of one window with 5%
of their characters changed (all duplicates of the first: one batched DP of M − 1 pairs), and
variants with 12% changed (pairs near the 0.8 threshold: the bounds pass, the DP runs, some
stay). Prints the time per query of each; target: well under a second, so that de-duplication
never waits on more than the extractor's own sampling.
"""

from __future__ import annotations

import random
import time

import click
from rich.console import Console
from rich.table import Table

from labeler.metrics.seer.duplicates import DUPLICATE_AT, NGRAM, deduplicate
from labeler.sources.registry import load_source


@click.command()
@click.option("--samples", default=10, show_default=True, help="Extractions per query (M).")
@click.option("--chars", default=1000, show_default=True, help="Characters per extraction.")
@click.option("--queries", default=20, show_default=True, help="Queries timed per shape.")
def main(samples: int, chars: int, queries: int) -> None:
    text = " ".join(p.contents for p in load_source("nq-sample").corpus.passages[:60])
    rng = random.Random(0)

    def window() -> str:
        start = rng.randrange(0, len(text) - chars - chars // 10)
        return text[start:start + rng.randrange(chars - chars // 20, chars + chars // 20)]

    def variants(share: float) -> list[str]:
        base = window()
        return [_edited(base, share, rng) for _ in range(samples)]

    shapes = {
        "distinct windows": lambda: [window() for _ in range(samples)],
        "variants, 5% edited (duplicates)": lambda: variants(0.05),
        "variants, 12% edited (near the threshold)": lambda: variants(0.12),
    }
    table = Table(title=f"de-duplication of {samples} samples of ~{chars} characters "
                        f"(n = {NGRAM}, threshold {DUPLICATE_AT})")
    for column in ("shape", "s per query", "kept per query (mean)"):
        table.add_column(column, justify="left" if column == "shape" else "right")
    for name, make in shapes.items():
        batch = [make() for _ in range(queries)]
        started = time.perf_counter()
        kept = [len(deduplicate(texts)) for texts in batch]
        took = (time.perf_counter() - started) / queries
        table.add_row(name, f"{took:.3f}", f"{sum(kept) / queries:.1f}")
    Console().print(table)


def _edited(text: str, share: float, rng: random.Random) -> str:
    """`text` with `share` of its characters replaced at random."""
    chars = list(text)
    for _ in range(int(share * len(chars))):
        chars[rng.randrange(len(chars))] = rng.choice("abcdefghij ")
    return "".join(chars)


if __name__ == "__main__":
    main()
