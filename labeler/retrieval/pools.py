"""Candidate pools per query: `rp` retrieved top-k, `hgp` human gold, `mcp` both, deduplicated."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from labeler.errors import InputError, UnknownNameError
from labeler.formats import Run
from labeler.paths import published_file
from labeler.sources.passage import Passage
from labeler.sources.registry import CORPORA
from labeler.sources.types import Source
from labeler.sources.unstored import UnstoredCorpus

if TYPE_CHECKING:
    from labeler.retrieval.dense import EncodeShards

POOLS = ("rp", "hgp", "mcp")
#: queries whose ranked passages are read from the corpus together
_QUERIES_A_READ = 256


@dataclass(frozen=True)
class Candidate:
    """A passage in a query's pool."""

    passage: Passage
    source: str  # "retrieved" | "human"
    rank: int | None  # 1-based retrieval rank; None for a human gold passage not retrieved
    score: float | None = None  # retrieval score where there is one
    gold: bool = False  # one of the query's human gold passages (same pid or identical text)


class Pools(dict):
    """qid -> list[Candidate], plus how the pools were made (`describe()` for manifests)."""

    def __init__(self, pools: dict, *, pool: str, k: int, encoder: dict | None, run: str | None):
        super().__init__(pools)
        self.pool, self.k, self.encoder, self.run = pool, k, encoder, run

    def describe(self) -> dict:
        """pool, k, encoder {name, model_id, pooling} or None, the run file ({name, sha256},
        never its local path) or None."""
        run = None if self.run is None else published_file(self.run)
        return {"pool": self.pool, "k": self.k, "encoder": self.encoder, "run": run}


def build_pools(
    source: Source,
    *,
    pool: str = "rp",
    k: int = 20,
    run: str | Path | None = None,
    encoder: str | None = None,
    index: str | None = None,
    cache_dir=None,
    encode: EncodeShards | None = None,
    bm25: Mapping[str, object] | None = None,
) -> Pools:
    """Candidates for every query of `source`.

    `rp`: top-`k` from `run` if given, else retrieval over `source.corpus` with `encoder`:
    `bm25` (sparse), else dense (default BGE-M3, offline fallback MiniLM). `hgp`: the human gold passages.
    `mcp`: rp, then each gold passage not already there (same pid or identical text).
    `index`: the dense index searched (labeler.retrieval.ann; default flat, exact).
    `encode`: how dense retrieval encodes the corpus's missing shards (default: here).
    `bm25`: BM25's options {fields, stemmer, k1, b} (None: unset), over the dataset's own.
    Fails before any model work as `check_pools` does.
    """
    ranked = check_pools(source, pool=pool, k=k, run=run, encoder=encoder, index=index,
                         bm25=bm25)
    if pool == "hgp":
        pools = {q.qid: [Candidate(p, "human", None, gold=True) for p in q.gold]
                 for q in source.queries}
        return Pools(pools, pool=pool, k=k, encoder=None, run=None)

    passages = _Lookup(source)
    described = None
    if ranked is None:
        from labeler.retrieval import bm25 as sparse
        from labeler.retrieval import bm25_config, dense

        if encoder == sparse.NAME:
            settings = bm25_config.BM25.of(source.bm25, **(bm25 or {}))
            ranked, used = sparse.retrieve(source, k=k, cache_dir=cache_dir, bm25=settings)
        else:
            ranked, used = dense.retrieve(source, k=k, encoder=encoder, cache_dir=cache_dir,
                                          index=index, encode=encode or dense.encode_here)
        described = used.describe()
    pools = {}
    for start in range(0, len(source.queries), _QUERIES_A_READ):
        queries = source.queries[start:start + _QUERIES_A_READ]
        rankings = [ranked.ranking(query.qid)[:k] for query in queries]
        found = iter(passages.get_many([pid for ranking in rankings for pid, _ in ranking]))
        for query, ranking in zip(queries, rankings):
            retrieved = [
                Candidate(passage, "retrieved", rank, score,
                          gold=any(_same(passage, g) for g in query.gold))
                for rank, ((_, score), passage) in enumerate(zip(ranking, found), 1)
            ]
            pools[query.qid] = _with_gold(retrieved, query.gold) if pool == "mcp" \
                else retrieved
    return Pools(pools, pool=pool, k=k, encoder=described, run=str(run) if run else None)


def check_pools(source: Source, *, pool: str = "rp", k: int = 20, run: str | Path | None = None,
                encoder: str | None = None, index: str | None = None,
                bm25: Mapping[str, object] | None = None) -> Run | None:
    """InputError for pools that cannot be made, checked without loading any model: an
    unknown pool, no queries, k < 1, hgp/mcp without human gold (a dry run's undownloaded
    corpus of KILT pages counts the references it would resolve), a bad `index` (or one its
    parameters do not fit the corpus size), a run file with hgp, rp/mcp with neither a
    run file nor a non-empty corpus, a bad run file, a named dense encoder that
    cannot load offline (ModelLoadError); the run file's ranking where one is given (None
    otherwise)."""
    if pool not in POOLS:
        raise UnknownNameError("pool", pool, list(POOLS))
    if not source.queries:
        raise InputError(f"dataset '{source.name}' has no queries to pool for")
    if k < 1:
        raise InputError(f"k must be at least 1, got {k}", field_name="k")
    if pool in ("hgp", "mcp") and not any(q.gold for q in source.queries) and not (
            isinstance(source.corpus, UnstoredCorpus) and source.corpus.maps_references
            and any(q.gold_refs for q in source.queries)):  # a dry run's: not resolved
        hint = "use --pool rp"
        if any(q.gold_refs for q in source.queries):  # KILT: references without text
            hint = ("its gold is KILT provenance without text: pass --corpus with KILT "
                    "paragraphs as <wikipedia_id>_<paragraph>, or use --pool rp")
        raise InputError(f"dataset '{source.name}' has no human gold passages",
                         field_name="pool", hint=hint)
    check_index(index, pool=pool, run=run, encoder=encoder)
    check_bm25(bm25, pool=pool, run=run, encoder=encoder, defaults=source.bm25)
    if pool == "hgp":
        if run is not None:  # else read nowhere, its pids never checked
            raise InputError("--run ranks retrieved pools (rp, mcp), and the pools are the "
                             "human gold", field_name="run",
                             hint="leave --run unset, or use --pool rp or mcp")
        return None
    if run is not None:
        unstored = isinstance(source.corpus, UnstoredCorpus)  # its pids are not known yet
        return Run.from_file(run, qids={q.qid for q in source.queries},
                             docids=None if unstored else _Lookup(source))
    if source.corpus is None:
        raise InputError(f"dataset '{source.name}' has no passage corpus to retrieve from",
                         field_name="corpus",
                         hint=f"pass --corpus NAME ({', '.join(CORPORA)}) or FILE (FlashRAG "
                              "corpus jsonl), or --run FILE")
    if not len(source.corpus):
        raise InputError(f"dataset '{source.name}' has an empty corpus", field_name="corpus")
    from labeler.retrieval import bm25, dense
    from labeler.retrieval.ann import IndexSpec

    if index is not None:  # an index too big for the corpus fails before it is encoded
        IndexSpec.parse(index).sized(len(source.corpus))

    if encoder is not None and encoder != bm25.NAME:  # None falls back to the bundled minilm
        dense.check_encoder(encoder)
    return None


def check_index(index: str | None, *, pool: str, run, encoder: str | None) -> None:
    """InputError unless `index` is None or a valid spec for pools that dense retrieval
    ranks (not hgp, a run file or BM25)."""
    if index is None:
        return
    from labeler.retrieval import bm25
    from labeler.retrieval.ann import IndexSpec

    IndexSpec.parse(index)
    sparse = "the pools are the human gold" if pool == "hgp" else "the run file ranks" \
        if run is not None else "BM25 ranks" if encoder == bm25.NAME else None
    if sparse:
        raise InputError(f"--index is for dense retrieval, and {sparse}", field_name="index",
                         hint="leave --index unset")


def check_bm25(options: Mapping[str, object] | None, *, pool: str, run, encoder: str | None,
               defaults: Mapping[str, object] | None = None) -> None:
    """InputError unless the BM25 `options` ({fields, stemmer, k1, b}, None: unset) make valid
    settings over `defaults`, and are unset unless BM25 ranks the pools."""
    from labeler.retrieval.bm25_config import BM25, NAME

    given = {name: value for name, value in (options or {}).items() if value is not None}
    if given and (pool == "hgp" or run is not None or encoder != NAME):
        flags = ", ".join(f"--bm25-{name.replace('_', '-')}" for name in given)
        raise InputError(f"{flags} set BM25 retrieval, and the pools here are not ranked by "
                         "it", field_name="encoder", hint="pass --encoder bm25 (rp or mcp, "
                                                          "no --run) or leave them unset")
    BM25.of(defaults, **given)


def gold_recall(pools: dict, source: Source) -> float | None:
    """Share of queries with human gold whose pool holds a gold passage (pid or same text)."""
    with_gold = [q for q in source.queries if q.gold]
    if not with_gold:
        return None
    hits = sum(any(c.gold for c in pools.get(q.qid, [])) for q in with_gold)
    return hits / len(with_gold)


class _Lookup:
    """Passages by pid, and the pids a run file may rank: the corpus's, else the queries' own
    gold passages (a run may name a gold passage the corpus lacks); read a pid or a batch at
    a time, never the whole corpus."""

    def __init__(self, source: Source):
        self._corpus = source.corpus
        self._gold = {p.pid: p for q in source.queries for p in q.gold}

    def __contains__(self, pid: object) -> bool:
        return pid in self._gold or (self._corpus is not None and pid in self._corpus)

    def missing(self, pids: Iterable[str]) -> set[str]:
        """Those of `pids` not here, the corpus's looked up together."""
        unknown = [pid for pid in pids if pid not in self._gold]
        if self._corpus is None:
            return set(unknown)
        return {pid for pid, known in zip(unknown, self._corpus.known(unknown)) if not known}

    def __getitem__(self, pid: str) -> Passage:
        if self._corpus is not None:
            try:
                return self._corpus[pid]
            except KeyError:  # a gold passage the corpus lacks
                pass
        return self._gold[pid]

    def get_many(self, pids: list[str]) -> list[Passage]:
        """`self[pid]` for each of `pids`, the corpus's read together."""
        found = self._corpus.get_many(pids) if self._corpus is not None else [None] * len(pids)
        return [self._gold[pid] if passage is None else passage
                for pid, passage in zip(pids, found)]


def _with_gold(retrieved: list[Candidate], gold: list[Passage]) -> list[Candidate]:
    merged = list(retrieved)
    for passage in gold:
        if not any(_same(c.passage, passage) for c in merged):
            merged.append(Candidate(passage, "human", None, gold=True))
    return merged


def _same(a: Passage, b: Passage) -> bool:
    return a.pid == b.pid or (a.title, a.text) == (b.title, b.text)
