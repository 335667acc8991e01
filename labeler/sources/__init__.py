"""Dataset sources: queries with answers and human gold passages, plus a passage corpus.

`load_source(name)` resolves a name through `SOURCES` (one lazy registry, adapters imported
only when used) or `jsonl:PATH` for any FlashRAG-format dataset file; its `corpus` through
`CORPORA` (the paper's corpora by name) or a FlashRAG-format corpus file.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from labeler.errors import InputError, UnknownNameError
from labeler.formats import read_jsonl
from labeler.lazy import lazy_exports

if TYPE_CHECKING:
    from labeler.sources.corpus import Corpus

__all__ = [
    "CORPORA", "KINDS", "SOURCES", "Corpus", "GoldRef", "Passage", "Query", "Source", "available",
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

    def pids_in(self, corpus: Corpus) -> list[str]:
        """The pids of the `corpus` passages it names (`Corpus.gold_pids`)."""
        return corpus.gold_pids(self.wikipedia_id, self.start_paragraph_id,
                                self.end_paragraph_id)


@dataclass
class Query:
    """A question (or a claim), its gold answers, and the human-annotated gold passages (may
    be empty); `gold_refs` names gold passages whose text the source does not hold."""

    qid: str
    question: str
    answers: list[str]
    gold: list[Passage] = field(default_factory=list)
    gold_refs: list[GoldRef] = field(default_factory=list)
    # graded human judgments by pid (TREC qrels, label > 0 relevant) where the source has them
    relevance: dict[str, int] = field(default_factory=dict)


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

    def describe(self) -> dict:
        """What a manifest records of the source: name, revision, licence, and its corpus
        (size; a named corpus's name, revision and licence; how much gold it holds)."""
        corpus = self.corpus
        return {
            "source_dataset": self.name,
            "source_revision": self.revision,
            "license": self.license,
            "corpus_passages": None if corpus is None else len(corpus),
            "corpus_source": None if corpus is None or corpus.name is None else {
                "name": corpus.name, "revision": corpus.revision, "license": corpus.license},
            "corpus_gold": self.gold_in_corpus(),
        }

    def gold_in_corpus(self) -> dict | None:
        """How many of the queries' human gold passages the corpus holds (a KILT reference
        counts as the passages it names, or as one missing where the corpus holds none): {gold, in_corpus, queries_with_gold, queries_with_gold_in_corpus};
        None without a corpus or without gold."""
        if self.corpus is None:
            return None
        gold = found = queries = queries_found = 0
        for q in self.queries:
            pids = dict.fromkeys(p.pid for p in q.gold)  # references the corpus holds too
            unheld = sum(not ref.pids_in(self.corpus) for ref in q.gold_refs)
            if not pids and not unheld:
                continue
            hits = sum(pid in self.corpus for pid in pids)
            gold, found = gold + len(pids) + unheld, found + hits
            queries, queries_found = queries + 1, queries_found + (hits > 0)
        if not queries:
            return None
        return {"gold": gold, "in_corpus": found, "queries_with_gold": queries,
                "queries_with_gold_in_corpus": queries_found}


#: `Corpus` (pyarrow) is imported when first asked for: `labeler score` needs only `Passage`
__getattr__, __dir__ = lazy_exports(__name__, {"Corpus": "labeler.sources.corpus"})

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
    "cisi-sample": "labeler.sources.search:load_cisi_sample",
}

#: corpus name -> "module:function() -> Corpus"; the paper retrieves from `wiki-dpr` (NQ,
#: TriviaQA, HotpotQA, FEVER) and `msmarco-passage` (MS MARCO); `kilt-wikipedia` holds the
#: paragraphs KILT provenance names.
CORPORA = {
    "kilt-w100": "labeler.sources.kilt_w100:load_kilt_w100",
    "wiki-dpr": "labeler.sources.corpora:load_wiki_dpr",
    "msmarco-passage": "labeler.sources.corpora:load_msmarco_passage",
    "kilt-wikipedia": "labeler.sources.corpora:load_kilt_wikipedia",
}

#: dataset -> the corpus it retrieves from when no --corpus is given: the paper's for the KILT
#: sets and 2WikiQA ("the Wikipedia dumps … split into DPR 100-word format", § Retrieval)
DEFAULT_CORPORA = {name: "kilt-w100" for name in ("nq", "tq", "hotpotqa", "fever", "2wiki")}

JSONL_PREFIX = "jsonl:"
#: `search:PATH`: a TSV or JSONL queries file (labeler.sources.search), with --corpus, --qrels
SEARCH_PREFIX = "search:"


def available() -> list[str]:
    """Every name `load_source` accepts."""
    return [*SOURCES, f"{JSONL_PREFIX}PATH", f"{SEARCH_PREFIX}PATH"]


def load_corpus(corpus: str | Path) -> Corpus:
    """A corpus by `CORPORA` name, else from a FlashRAG-format file (`{id, contents}`)."""
    from labeler.sources import flashrag

    if str(corpus) in CORPORA:
        module, attr = CORPORA[str(corpus)].split(":")
        return getattr(importlib.import_module(module), attr)()
    path = Path(corpus)
    if not path.exists() and len(path.parts) == 1 and not path.suffix:  # a mistyped name
        raise UnknownNameError("corpus", str(corpus), [*CORPORA, "FILE"],
                               hint="name one of the corpora or pass a FlashRAG corpus file")
    return flashrag.read_corpus(path)


def load_source(
    name: str, *, corpus: str | Path | None = None, limit: int | None = None,
    qrels: str | Path | None = None,
) -> Source:
    """Load dataset `name` (first `limit` queries); `corpus` (a `CORPORA` name or a FlashRAG
    corpus file) replaces its passage corpus; `qrels` (TREC qrels) gives its queries graded
    relevance and gold (`search.with_qrels`). The corpus never depends on `limit`.

    A corpus named by `corpus` is read first, so a bad one fails before the queries'
    download; a dataset's default corpus (`DEFAULT_CORPORA`) after its queries. Each gold
    passage is mapped onto the corpus passage with the same pid (DPR / psgs_w100 ids), else
    the same title and text; one the corpus lacks stays a gold passage of its own text (an
    `mcp` pool adds it) and `Source.gold_in_corpus()` counts it as missing. A query's gold
    references (KILT provenance) become the corpus passages over their paragraphs
    (`Corpus.gold_pids`: `kilt-w100`'s spans, `kilt-wikipedia`'s paragraphs); other corpora
    match none.
    """
    from labeler.sources import flashrag, search

    passages = load_corpus(corpus) if corpus is not None else None
    if name.startswith(JSONL_PREFIX):
        source = flashrag.load_jsonl(name[len(JSONL_PREFIX) :], limit=limit)
        _check_jsonl(source.queries, name[len(JSONL_PREFIX) :])
    elif name.startswith(SEARCH_PREFIX):
        source = search.load_search(name[len(SEARCH_PREFIX) :], limit=limit)
    elif name in SOURCES:
        module, attr = SOURCES[name].split(":")
        source = getattr(importlib.import_module(module), attr)(limit=limit)
    else:
        raise UnknownNameError("dataset", name, available())
    if passages is None and name in DEFAULT_CORPORA:  # after the queries: it is the bigger
        passages = load_corpus(DEFAULT_CORPORA[name])
    if passages is not None:
        source.corpus = passages
        pinned = (f"{passages.name}@{passages.revision}" if passages.name
                  else passages.fingerprint[:16])
        source.revision = f"{source.revision}+corpus:{pinned}"
        for q in source.queries:
            q.gold = _resolve(q, passages)
    return source if qrels is None else search.with_qrels(source, qrels)


def _check_jsonl(queries: list[Query], path: str) -> None:
    """Each qid once and no empty or blank gold answer (it would match every output), checked
    before any LLM work; InputError at the bad query's line of `path`, whose records are the
    queries in order."""
    first: dict[str, int] = {}
    for i, query in enumerate(queries):
        if query.qid in first:
            lines = _record_lines(path, i + 1)
            raise InputError(f"duplicate qid '{query.qid}' (first on line "
                             f"{lines[first[query.qid]]})", path, lines[i], "id")
        first[query.qid] = i
        blank = next((j for j, answer in enumerate(query.answers) if not answer.strip()), None)
        if blank is not None:
            raise InputError("empty or blank gold answer", path, _record_lines(path, i + 1)[i],
                             f"golden_answers[{blank}]")


def _record_lines(path: str, count: int) -> list[int]:
    """The line numbers of the first `count` records of a JSONL file (blank lines skipped)."""
    return [line_no for line_no, _ in islice(read_jsonl(path, skip_blank=True), count)]


def _resolve(query: Query, corpus: Corpus) -> list[Passage]:
    """The query's gold passages, each as the corpus holds it where it does, plus those of its
    gold references the corpus holds; distinct by pid, in order."""
    gold: dict[str, Passage] = {}
    for p in query.gold:
        found = corpus.find(p) or p
        gold.setdefault(found.pid, found)
    for ref in query.gold_refs:
        gold.update((pid, corpus[pid]) for pid in ref.pids_in(corpus) if pid not in gold)
    return list(gold.values())
