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

__all__ = [
    "KINDS", "SOURCES", "Corpus", "GoldRef", "Passage", "Query", "Source", "available",
    "load_source",
]


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


@dataclass(frozen=True)
class GoldRef:
    """A human gold passage known only by where it is: a KILT provenance, which names a
    Wikipedia page and a paragraph range of the KILT knowledge source but holds no text."""

    wikipedia_id: str  # the KILT knowledge source's page id
    title: str  # the page title
    start_paragraph_id: int  # first paragraph (index into the page's `text` list)
    end_paragraph_id: int  # last paragraph, inclusive

    @property
    def pids(self) -> list[str]:
        """The pids `<wikipedia_id>_<paragraph>` of a paragraph-level KILT corpus it covers."""
        return [f"{self.wikipedia_id}_{i}"
                for i in range(self.start_paragraph_id, self.end_paragraph_id + 1)]


@dataclass
class Query:
    """A question (or a claim), its gold answers, and the human-annotated gold passages (may
    be empty); `gold_refs` names gold passages whose text the source does not hold."""

    qid: str
    question: str
    answers: list[str]
    gold: list[Passage] = field(default_factory=list)
    gold_refs: list[GoldRef] = field(default_factory=list)


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
        """sha256 over every pid, title and text, in order: keys the embedding index."""
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
    # What a query is, which picks a task's prompts: "question" (answered), or "claim"
    # (verified: the answers are verdicts, SUPPORTS / REFUTES).
    kind: str = field(default="question", kw_only=True)
    # True when the answers are free-text sentences (MS MARCO) that an LLM must reduce to
    # short entity answers before has_answer can match them: `--answer-extractor`.
    sentence_answers: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"query kind {self.kind!r} is not one of {', '.join(KINDS)}",
                             field_name="kind")
        if not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", self.license):
            raise InputError(
                f"licence {self.license!r} is not a Hugging Face Hub licence id",
                field_name="license",
                hint="use one like cc-by-sa-4.0, apache-2.0, mit, other or unknown",
            )


#: what a query can be (`Source.kind`)
KINDS = ("question", "claim")

#: dataset name -> "module:function(limit) -> Source"; imported only when used. nq, tq,
#: hotpotqa and fever are the paper's KILT dev sets (human gold: KILT provenance, as
#: references); the -tevatron and -distractor sets carry gold passage text instead.
SOURCES = {
    "nq-sample": "labeler.sources.bundled:load_nq_sample",
    "nq": "labeler.sources.kilt:load_nq",
    "tq": "labeler.sources.kilt:load_tq",
    "msmarco-fqa": "labeler.sources.msmarco:load_msmarco_fqa",
    "hotpotqa": "labeler.sources.kilt:load_hotpotqa",
    "fever": "labeler.sources.kilt:load_fever",
    "2wiki": "labeler.sources.flashrag:load_2wiki",
    "nq-tevatron": "labeler.sources.tevatron:load_nq",
    "tq-tevatron-distant": "labeler.sources.tevatron:load_tq",
    "hotpotqa-distractor": "labeler.sources.hotpotqa:load_hotpotqa",
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
    before any download. A query's gold references (KILT provenance) become gold passages
    where the corpus has their paragraphs under pids `<wikipedia_id>_<paragraph>` (a
    paragraph-level cut of the KILT knowledge source); other corpora match none of them.
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
        for q in source.queries:
            q.gold = _resolve(q, passages)
    return source


def _resolve(query: Query, corpus: Corpus) -> list[Passage]:
    """The query's gold passages plus those of its gold references the corpus holds."""
    gold = {p.pid: p for p in query.gold}
    for ref in query.gold_refs:
        gold.update((pid, corpus[pid]) for pid in ref.pids if pid in corpus and pid not in gold)
    return list(gold.values())
