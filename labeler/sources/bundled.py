"""`nq-sample`: NQ-open questions with their human gold chunk and a ~4.3k-passage corpus,
shipped inside the package (labeler/data/nq_sample, made by scripts/make_nq_sample.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
from importlib.resources import files
from pathlib import Path

from labeler.paths import file_sha256
from labeler.sources.corpus import Corpus
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source

_FILES = ("queries.jsonl.gz", "corpus.jsonl.gz")
#: labeler/data/nq_sample/LICENSE: the derived files are distributed under CC BY-SA 3.0
#: (NQ-open and the Wikipedia passages are CC BY-SA 3.0).
LICENSE = "cc-by-sa-3.0"


def load_nq_sample(*, limit: int | None = None) -> Source:
    """The bundled sample; `revision` is the sha256 over its data files."""
    folder = Path(str(files("labeler") / "data" / "nq_sample"))
    corpus = Corpus([Passage(r["pid"], r["title"], r["text"]) for r in _read(folder / _FILES[1])])
    queries = [
        Query(r["qid"], r["question"], r["answers"], [corpus[pid] for pid in r["gold_pids"]])
        for r in _read(folder / _FILES[0])
    ][:limit]
    return Source("nq-sample", _revision(folder), queries, corpus, license=LICENSE,
                  language="en")


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _revision(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in _FILES:
        digest.update(bytes.fromhex(file_sha256(folder / name)))
    return digest.hexdigest()
