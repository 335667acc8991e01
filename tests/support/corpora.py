"""Real subsets of nq-sample's 4,349-passage corpus for dense retrieval: its questions' gold
chunks and evenly spaced other passages. MiniLM encodes ~12 passages a second on 2 CPU cores
(docs/measurements.md), so the whole corpus costs minutes that a test's point rarely needs."""

from __future__ import annotations

import json
from pathlib import Path

from labeler.sources.corpus import Corpus
from labeler.sources.registry import load_source
from labeler.sources.types import Source


def nq_subset(limit: int | None, *, every: int = 60, size: int | None = None) -> Source:
    """nq-sample's first `limit` questions (None: all 300) over their gold chunks and, after
    them, every `every`-th other passage, or `size` passages in all evenly spaced."""
    source = load_source("nq-sample", limit=limit)
    gold = list(dict.fromkeys(q.gold[0] for q in source.queries))
    known = set(gold)
    others = [p for p in source.corpus.passages if p not in known]
    if size is not None:
        every = len(others) / (size - len(gold))
        others = [others[int(i * every)] for i in range(size - len(gold))]
    else:
        others = others[::every]
    source.corpus = Corpus(gold + others)
    return source


def write_corpus(corpus: Corpus, path: Path) -> Path:
    """`corpus` as a FlashRAG corpus file (`--corpus FILE`): one {id, contents} a line."""
    path.write_text("".join(json.dumps({"id": p.pid, "contents": f"{p.title}\n{p.text}"}) + "\n"
                            for p in corpus.passages), encoding="utf-8")
    return path
