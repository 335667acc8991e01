"""An independent multi-field BM25, written out in plain Python, to check labeler's against:
the rubric experiment's analyser (curly quotes folded, ASCII punctuation as spaces, lower case,
white-space split, Snowball stems from PyStemmer) and Lucene's BM25 per field, summed with the
fields' boosts. No bm25s, numpy or labeler code."""

from __future__ import annotations

import csv
import math
import string
from collections import Counter
from pathlib import Path

import Stemmer

WANDS = Path(__file__).parents[1] / "fixtures" / "hub_mirror" / "wands"
#: characters the analyser makes a space of; the curly double quotes and the en dash become
#: their ASCII look-alikes and stay (the experiment folds and strips in one pass)
_SPACE = set(string.punctuation) | {"‘", "’", "´"}
_KEEP_AS = {"“": '"', "”": '"', "–": "-"}


def terms(text: str, language: str = "english") -> list[str]:
    """The analysed terms of `text`, repeats kept."""
    stem = Stemmer.Stemmer(language).stemWord
    chars = (" " if c in _SPACE else _KEEP_AS.get(c, c) for c in text.lower())
    return [stem(word) for word in "".join(chars).split()]


def wands_products() -> list[dict]:
    """The WANDS fixture's products, in file order: {pid, title, text}."""
    with (WANDS / "product.csv").open(encoding="utf-8", newline="") as f:
        return [{"pid": row["product_id"], "title": row["product_name"],
                 "text": row["product_description"]}
                for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]


def wands_queries() -> list[tuple[str, str]]:
    """The WANDS fixture's (query_id, query), in file order."""
    with (WANDS / "query.csv").open(encoding="utf-8", newline="") as f:
        return [(row["query_id"], row["query"])
                for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]


def ranking(docs: list[dict], query: str, fields: dict[str, float], *, k1: float = 1.2,
            b: float = 0.75, language: str = "english") -> list[tuple[str, float]]:
    """(pid, score) of every doc scoring above 0, best first, ties in `docs` order:
    score = Σ_term Σ_field boost · idf · tf / (tf + k1 (1 - b + b · dl / avgdl)), with
    idf = ln(1 + (N - df + 0.5) / (df + 0.5)) and df, dl, avgdl of that field alone."""
    n = len(docs)
    counts = {f: [Counter(terms(d[f] if f != "contents" else
                                f"{d['title']} {d['text']}" if d["title"] else d["text"],
                                language)) for d in docs] for f in fields}
    scores = [0.0] * n
    for term in terms(query, language):
        for field, boost in fields.items():
            df = sum(term in c for c in counts[field])
            if not df:
                continue
            avgdl = sum(sum(c.values()) for c in counts[field]) / n
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for i, c in enumerate(counts[field]):
                tf, dl = c[term], sum(c.values())
                if tf:
                    scores[i] += boost * idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))
    order = sorted((i for i in range(n) if scores[i] > 0), key=lambda i: -scores[i])
    return [(docs[i]["pid"], scores[i]) for i in order]
