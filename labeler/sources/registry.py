"""The sources and corpora by name, and `load_source`, which joins a dataset's queries to the
corpus its passages come from."""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from labeler.errors import InputError, UnknownNameError
from labeler.lazy import load_entry
from labeler.lines import read_jsonl
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source

if TYPE_CHECKING:
    from labeler.sources.corpus import Corpus
    from labeler.sources.unstored import UnstoredCorpus

#: dataset name -> "module:function(limit) -> Source"; imported only when used. nq, tq,
#: hotpotqa and fever are the paper's KILT dev sets (human gold: KILT provenance, as
#: references); the -tevatron and -distractor sets carry gold passage text instead; the
#: -train sets are the training splits SEER builds its preference pairs from.
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
    "nq-open-train": "labeler.sources.nq_open:load_nq_open_train",
    "nq-open-test": "labeler.sources.nq_open:load_nq_open_test",
    "tq-train": "labeler.sources.flashrag:load_tq_train",
    "tq-test": "labeler.sources.flashrag:load_tq_test",
    "hotpotqa-train": "labeler.sources.kilt:load_hotpotqa_train",
    "cisi-sample": "labeler.sources.search:load_cisi_sample",
    "wands": "labeler.sources.product_search:load_wands",
    "esci": "labeler.sources.product_search:load_esci",
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

#: dataset -> the corpus it retrieves from when no --corpus is given: the utility paper's for the
#: KILT sets and 2WikiQA ("the Wikipedia dumps … split into DPR 100-word format", § Retrieval:
#: KILT's 2019 Wikipedia cut as DPR cut its own, not DPR's passages), also for SEER's splits
#: here; SEER retrieves from DPR's own 21M passages (`wiki-dpr`, its Implementation Details),
#: which `reproduce seer-paper` passes
DEFAULT_CORPORA = {name: "kilt-w100" for name in (
    "nq", "tq", "hotpotqa", "fever", "2wiki", "nq-open-train", "tq-train", "hotpotqa-train",
    "nq-open-test", "tq-test")}

JSONL_PREFIX = "jsonl:"
#: `search:PATH`: a TSV or JSONL queries file (labeler.sources.search), with --corpus, --qrels
SEARCH_PREFIX = "search:"


def available() -> list[str]:
    """Every name `load_source` accepts."""
    return [*SOURCES, f"{JSONL_PREFIX}PATH", f"{SEARCH_PREFIX}PATH"]


def load_corpus(corpus: str | Path, *, stored_only: bool = False) -> Corpus | UnstoredCorpus:
    """A corpus by `CORPORA` name, else from a FlashRAG-format file (`{id, contents}`);
    `stored_only` (a dry run) downloads no named corpus the cache does not hold, and gives
    what its pin records of it instead (`UnstoredCorpus`)."""
    from labeler.sources import flashrag
    from labeler.sources.corpus import NotStored, without_storing
    from labeler.sources.unstored import unstored

    if str(corpus) in CORPORA:
        if not stored_only:
            return load_entry(CORPORA[str(corpus)])()
        try:
            with without_storing():
                return load_entry(CORPORA[str(corpus)])()
        except NotStored:
            return unstored(str(corpus))
    path = Path(corpus)
    if not path.exists() and len(path.parts) == 1 and not path.suffix:  # a mistyped name
        raise UnknownNameError("corpus", str(corpus), [*CORPORA, "FILE"],
                               hint="name one of the corpora or pass a FlashRAG corpus file")
    return flashrag.read_corpus(path)


def load_source(
    name: str, *, corpus: str | Path | None = None, limit: int | None = None,
    qrels: str | Path | None = None, stored_only: bool = False,
    sample: tuple[int, int] | None = None,
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
    match none. `stored_only` (a dry run) leaves a named corpus the cache does not hold
    undownloaded (`load_corpus`), its gold references unresolved, and a big dataset file read
    by its head only (`labeler.sources.heads`). `sample` (n, seed) lets a loader that takes
    it draw the seeded sample as it loads (ESCI, in Arrow: `sampling.seeded_sample` keeps
    it); another loads every query and leaves the draw to the task's `select`.
    """
    from labeler.sources import flashrag, search
    from labeler.sources.unstored import UnstoredCorpus

    passages = load_corpus(corpus, stored_only=stored_only) if corpus is not None else None
    if name.startswith(JSONL_PREFIX):
        source = flashrag.load_jsonl(name[len(JSONL_PREFIX) :], limit=limit)
        _check_jsonl(source.queries, name[len(JSONL_PREFIX) :])
    elif name.startswith(SEARCH_PREFIX):
        source = search.load_search(name[len(SEARCH_PREFIX) :], limit=limit)
    elif name in SOURCES:
        source = _load_named(name, limit, stored_only, sample)
    else:
        raise UnknownNameError("dataset", name, available())
    if passages is None and name in DEFAULT_CORPORA:  # after the queries: it is the bigger
        passages = load_corpus(DEFAULT_CORPORA[name], stored_only=stored_only)
    if passages is not None:
        source.corpus = passages
        pinned = (f"{passages.name}@{passages.revision}" if passages.name
                  else passages.fingerprint[:16])
        source.revision = f"{source.revision}+corpus:{pinned}"
        for q in () if isinstance(passages, UnstoredCorpus) else source.queries:
            q.gold = _resolve(q, passages)
    return source if qrels is None else search.with_qrels(source, qrels)


def _load_named(name: str, limit: int | None, stored_only: bool,
                sample: tuple[int, int] | None) -> Source:
    """Dataset `name` of `SOURCES`, drawing `sample` where its loader takes one; a dry run
    (`stored_only`) reads a big file the Hub cache lacks by its head only, and the source
    says so (`Source.head`, `labeler.sources.heads`)."""
    import inspect

    from labeler.sources.heads import heads_only

    loader = load_entry(SOURCES[name])
    options = {"limit": limit}
    if sample is not None and "sample" in inspect.signature(loader).parameters:
        options["sample"] = sample
    if not stored_only:
        return loader(**options)
    with heads_only() as heads:
        source = loader(**options)
    source.head = next((head for head in heads if not head.whole), None)
    return source


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
