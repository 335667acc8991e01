"""Dataset sources: queries with answers and human gold passages, plus a passage corpus.

`load_source(name)` resolves a name through `SOURCES` (one lazy registry, adapters imported
only when used) or `jsonl:PATH` for any FlashRAG-format dataset file.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from labeler.errors import InputError, UnknownNameError

__all__ = ["SOURCES", "Corpus", "Passage", "Query", "Source", "available", "load_source"]


@dataclass(frozen=True)
class Passage:
    """One retrievable unit of text."""

    pid: str  # stable id: the psgs_w100 id where the source has one
    title: str
    text: str

    @property
    def contents(self) -> str:
        """The text an LLM or an encoder sees: `"{title} {text}"`."""
        return f"{self.title} {self.text}" if self.title else self.text


@dataclass
class Query:
    """A question, its gold answers, and the human-annotated gold passages (may be empty)."""

    qid: str
    question: str
    answers: list[str]
    gold: list[Passage] = field(default_factory=list)


@dataclass
class Corpus:
    """Passages to retrieve from, addressable by pid."""

    passages: list[Passage]

    def __post_init__(self) -> None:
        self._by_pid = {p.pid: p for p in self.passages}

    def __len__(self) -> int:
        return len(self.passages)

    def __contains__(self, pid: object) -> bool:
        return pid in self._by_pid

    def __getitem__(self, pid: str) -> Passage:
        return self._by_pid[pid]

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over every pid, title and text, in order: keys the embedding cache."""
        digest = hashlib.sha256()
        for p in self.passages:
            digest.update(f"{p.pid}\t{p.title}\t{p.text}\n".encode())
        return digest.hexdigest()


@dataclass
class Source:
    """A loaded dataset: what a build labels and where its pools come from."""

    name: str  # the name it was loaded by, e.g. "nq-sample", "jsonl:data/dev.jsonl"
    revision: str  # pins the data: sha256 of bundled/local files, or the Hub commit
    queries: list[Query]
    corpus: Corpus | None  # None: no passages to retrieve from (pass --corpus)
    # The licence the data's authors release it under, as a Hub licence id ("cc-by-sa-3.0",
    # "apache-2.0", ...; "other": their own terms; "unknown": nobody has said). Each adapter
    # declares its own; published cards take it from here.
    license: str = field(default="unknown", kw_only=True)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", self.license):
            raise InputError(
                f"licence {self.license!r} is not a Hugging Face Hub licence id",
                field_name="license",
                hint="use one like cc-by-sa-4.0, apache-2.0, mit, other or unknown",
            )


#: dataset name -> "module:function(limit) -> Source"; imported only when used.
SOURCES = {
    "nq-sample": "labeler.sources.bundled:load_nq_sample",
    "nq": "labeler.sources.tevatron:load_nq",
    "tq": "labeler.sources.tevatron:load_tq",
    "msmarco-fqa": "labeler.sources.msmarco:load_msmarco_fqa",
    "hotpotqa": "labeler.sources.hotpotqa:load_hotpotqa",
    "fever": "labeler.sources.kilt:load_fever",
    "2wiki": "labeler.sources.flashrag:load_2wiki",
}

JSONL_PREFIX = "jsonl:"


def available() -> list[str]:
    """Every name `load_source` accepts."""
    return [*SOURCES, f"{JSONL_PREFIX}PATH"]


def load_source(
    name: str, *, corpus: str | Path | None = None, limit: int | None = None
) -> Source:
    """Load dataset `name` (first `limit` queries); `corpus` replaces its passage corpus.

    The corpus file (FlashRAG format, `{id, contents}`) is read first, so a bad one fails
    before any download.
    """
    from labeler.sources import flashrag

    passages = flashrag.read_corpus(corpus) if corpus is not None else None
    if name.startswith(JSONL_PREFIX):
        source = flashrag.load_jsonl(name[len(JSONL_PREFIX) :], limit=limit)
    elif name in SOURCES:
        module, attr = SOURCES[name].split(":")
        source = getattr(importlib.import_module(module), attr)(limit=limit)
    else:
        raise UnknownNameError("dataset", name, available())
    if passages is not None:
        source.corpus = passages
        source.revision = f"{source.revision}+corpus:{passages.fingerprint[:16]}"
    return source
