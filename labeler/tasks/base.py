"""The task seam: what every labelling method shares, so that a method module only says what
to ask the LLM and how to read its answers.

A task is an artifact kind (`ArtifactKind`: statistics, tables, card, attachments, how
`labeler score` reads a record) that labels: it has a config (a `TaskConfig` dataclass), named
prompt templates and decoding settings, checks that fail before any LLM work, the calls a
build would make (`planned_calls`, for `--dry-run`), and one entry point,
`label(calls, shard) -> records`. The base builds the calls: one `Calls` per model role
(the build's LLM as `LLM`, and each role of `extra_models`), batched, each distinct request
asked once per shard.

An artifact is one or more tables: "data" (one record per query) and the task's `tables`.
`derive` makes a shard's tables from its labelled records; a task whose tables depend on the
whole build (SEER ranks by weights computed over every extraction) sets `settles` and computes
those values in `settle`, which the build calls once every shard is labelled.
"""

from __future__ import annotations

import copy
import hashlib
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from itertools import accumulate, pairwise
from typing import Any, ClassVar, NamedTuple

from labeler.artifacts.kinds import ArtifactKind
from labeler.errors import InputError
from labeler.llm.base import Backend, Sampling
from labeler.llm.calls import Calls
from labeler.retrieval import POOLS, Candidate
from labeler.retrieval.pools import check_bm25, check_index
from labeler.sources.types import Query, Source
from labeler.tasks.shard_plan import plan_shards

#: the role of the build's LLM among a task's calls
LLM = "llm"
#: the folder (and the manifest's `llm`) of a version whose task asks no LLM
NO_LLM = "no-llm"


@dataclass(frozen=True)
class TaskConfig:
    """What every task is given: the data and how its candidate pools are made."""

    dataset: str  # source name: nq-sample, nq, ..., or jsonl:PATH
    corpus: str | None = None  # a CORPORA name or FlashRAG corpus file replacing the source's own
    limit: int | None = None  # only the first N queries
    pool: str = "rp"  # rp: top-k retrieved; hgp: human gold; mcp: both
    k: int = 20  # retrieved passages per query
    run: str | None = None  # TREC or JSONL run file used instead of retrieval
    qrels: str | None = None  # TREC qrels file: graded human judgments of the queries
    encoder: str | None = None  # dense retriever for rp (default: bge-m3, offline minilm)
    index: str | None = None  # dense index: flat (exact, the default), ivf[:...], hnsw[:...]
    # BM25 retrieval's settings (None: the dataset's own, else one unstemmed field, k1 1.2,
    # b 0.75): fields with boosts ("title^9.3,text^4.1"), a Snowball stemmer language or "none"
    bm25_fields: str | None = None
    bm25_stemmer: str | None = None
    bm25_k1: float | None = None
    bm25_b: float | None = None
    # LLM that first reduces sentence answers (msmarco-fqa) to entity answers; required for
    # such a source, refused for any other
    answer_extractor: str | None = None

    def __post_init__(self) -> None:
        if self.pool not in POOLS:
            raise InputError(f"unknown pool '{self.pool}' (use one of {', '.join(POOLS)})",
                             field_name="pool")
        if self.k < 1:
            raise InputError(f"k must be at least 1, got {self.k}", field_name="k")
        if self.limit is not None and self.limit < 1:
            raise InputError(f"limit must be at least 1, got {self.limit}", field_name="limit")
        check_index(self.index, pool=self.pool, run=self.run, encoder=self.encoder)
        check_bm25(self.bm25(), pool=self.pool, run=self.run, encoder=self.encoder)
        for f in fields(self):
            _check_bounds(f.name, getattr(self, f.name), f.metadata)

    def select(self, source: Source) -> Source:
        """The queries of `source` this config labels: all that were loaded (a task that
        samples them overrides this)."""
        return source

    def drawn(self) -> tuple[int, int] | None:
        """(n, seed) of the seeded sample `select` draws, which a source may draw as it loads
        (`load_source`'s `sample`); None where it draws none."""
        return None

    def bm25(self) -> dict:
        """The BM25 options as `build_pools` takes them: {fields, stemmer, k1, b}."""
        return {"fields": self.bm25_fields, "stemmer": self.bm25_stemmer, "k1": self.bm25_k1,
                "b": self.bm25_b}

    @classmethod
    def from_options(cls, **options: Any) -> TaskConfig:
        """The config from command options; an option this task does not take must be unset
        (None), else InputError names it. An unset option keeps the field's default."""
        names = {f.name for f in fields(cls)}
        for name, value in options.items():
            if name not in names and value is not None:
                flag = name.replace("_", "-")
                raise InputError(f"--{'no-' if value is False else ''}{flag} does not apply to "
                                 "this artifact", field_name=name)
        return cls(**{k: str(v) if k in ("corpus", "run", "qrels") else v
                      for k, v in options.items() if k in names and v is not None})


def _check_bounds(name: str, value: Any, metadata: Mapping) -> None:
    """InputError unless `value` lies within the bounds its field's metadata declares (`min`,
    `max`, `min_open`, `choices`: the bounds the CLI's option of the field takes too)."""
    choices = metadata.get("choices")
    if choices is not None and value not in choices:
        raise InputError(f"{name} must be one of {', '.join(choices)}, got {value!r}",
                         field_name=name)
    low, high, open_low = metadata.get("min"), metadata.get("max"), metadata.get("min_open")
    if value is None or (low is None and high is None):
        return
    if (low is not None and (value <= low if open_low else value < low)) or \
            (high is not None and value > high):
        if high is not None:
            allowed = f"in {'(' if open_low else '['}{low}, {high}]"
        elif open_low:
            allowed = "positive" if low == 0 else f"greater than {low}"
        else:
            allowed = f"at least {low}"
        raise InputError(f"{name} must be {allowed}, got {value}", field_name=name)


@dataclass(frozen=True)
class Shard:
    """A slice of the queries with their candidate pools: the unit of resumption and work."""

    index: int  # 0-based, in query order
    queries: tuple[Query, ...]
    pools: dict[str, list[Candidate]]  # qid -> candidates, for this shard's queries
    kind: str = "question"  # the source's kind of query (`Source.kind`): picks the prompts


def make_shards(queries: Sequence[Query], pools: dict[str, list[Candidate]],
                size: int | Sequence[int], *, kind: str = "question") -> list[Shard]:
    """`queries` in order, cut into shards of `size` each (the last may be shorter) or of the
    sizes a shard plan lists (`plan_shards`), all of `kind`."""
    if isinstance(size, int):
        if size < 1:
            raise InputError(f"shard size must be at least 1, got {size}",
                             field_name="shard_size")
        size = plan_shards(len(queries), size=size)
    starts = [0, *accumulate(size)]
    return [
        Shard(i, tuple(part), {q.qid: pools.get(q.qid, []) for q in part}, kind)
        for i, part in enumerate(queries[a:b] for a, b in pairwise(starts))
    ]


def digest(request) -> bytes:
    """A short digest of a request (a prompt, or a tuple of them): what a plan keeps to tell
    repeated requests apart, so that a whole dataset's prompts need not be kept."""
    return hashlib.blake2b(repr(request).encode(), digest_size=16).digest()


def requests_of(calls: Iterable[PlannedCall]) -> int:
    """The requests a served model receives for `calls`, as if none repeated another."""
    return sum(call.calls if call.requests is None else call.requests for call in calls)


class PlannedCall(NamedTuple):
    """One kind of LLM call of a planned build: what is asked, how many calls, passages in
    each prompt (a mean), how the count is known (exact, an upper bound, an estimate), and
    the requests a served model receives for them where that is not one a call (several
    samples of a prompt in one request; a P(yes) of k choices scored from prompt
    log-probabilities: one request per choice's first token, which all differ)."""

    what: str
    calls: int
    passages: float
    how: str
    requests: int | None = None  # None: one request a call


class Task(ArtifactKind):
    """One labelling method. Subclasses set the class attributes and implement `label`,
    `statistics` and, if their records can be scored against, `reference`."""

    #: the config dataclass this task takes
    Config: ClassVar[type[TaskConfig]] = TaskConfig
    #: prompt templates by name (their text and sha256 go into the manifest), for questions;
    #: a task that also labels other kinds of query (`Source.kind`) overrides `templates`
    prompts: ClassVar[dict[str, str]] = {}
    #: what it labels, a paragraph of `labeler build --help` (its first words: the method)
    summary: ClassVar[str] = ""
    #: the optional backend operations its `label` asks (`labeler.llm.OPTIONAL_OPERATIONS`):
    #: a build on a backend lacking one is refused before any model loads
    operations: ClassVar[tuple[str, ...]] = ()
    #: whether `derive` needs `settle`'s values from the whole build (then every shard is
    #: labelled and staged before any table is written)
    settles: ClassVar[bool] = False
    #: whether `label` asks an LLM: a task that does not is built with no --llm and loads no
    #: model (its `calls` are empty), into the folder NO_LLM
    asks_llm: ClassVar[bool] = True

    def __init__(self, config: TaskConfig) -> None:
        if not isinstance(config, self.Config):
            raise TypeError(f"{type(self).__name__} takes a {self.Config.__name__}")
        self.config = config

    @property
    def decoding(self) -> dict[str, Sampling]:
        """This build's decoding settings by name (a task may sample with one and score with
        another), from its config; recorded in the manifest."""
        return {}

    def check(self, source: Source) -> None:
        """Raise InputError for data this task cannot label, before any LLM work."""

    def scoring(self) -> tuple[str, ...]:
        """The contract's scoring operations (loglikelihood, choice_probs) its `label` asks
        with this config: a loaded model that refuses one (`Backend.refusal`) fails the
        build once it loads, before any request."""
        return ()

    @abstractmethod
    def planned_calls(self, source: Source, candidates: int, gold: Sequence[int]
                      ) -> list[PlannedCall]:
        """Each kind of LLM call a build of `source` would make (`labeler build --dry-run`),
        given its candidate pools' size (`candidates` over all queries, exact or a bound) and
        each query's human gold passages (`gold`, estimated for a corpus not stored)."""

    def planned_requests(self, source: Source, pools: Mapping[str, list[Candidate]]
                         ) -> tuple[int, str]:
        """The requests a served model receives for a build of `source` over `pools` (known
        before any model runs: the human gold, or a run file's), and how that is known; each
        request once, as `Calls` and the call cache ask it. Here: `planned_calls`' over the
        queries `label` asks (`asks`), one whose question and pool repeat another's once."""
        asked: dict[bytes, Query] = {}
        for q in source.queries:
            if self.asks(q, pools.get(q.qid, [])):
                asked.setdefault(digest((q.question, [c.passage.contents
                                                      for c in pools.get(q.qid, [])])), q)
        queries = list(asked.values())
        calls = self.planned_calls(replace(source, queries=queries),
                                   sum(len(pools.get(q.qid, [])) for q in queries),
                                   [len(q.gold) for q in queries])
        return requests_of(calls), "upper bound: as if no two of a query's requests agreed"

    def asks(self, query: Query, pool: Sequence[Candidate]) -> bool:
        """Whether `label` asks anything of its LLM for `query` over `pool`."""
        return True

    def templates(self, kind: str = "question") -> dict[str, str]:
        """The prompt templates for queries of `kind`; InputError for a kind it cannot label."""
        if kind != "question":
            raise InputError(f"the {self.name} task labels questions, not {kind}s",
                             field_name="dataset")
        return dict(self.prompts)

    def extra_models(self) -> dict[str, str]:
        """Models the task asks besides the build's LLM, {role: model name} (e.g. SEER's
        extractor); each is loaded with the LLM's backend settings."""
        return {}

    def calls(self, llm: Backend | None, models: Mapping[str, Backend] | None = None,
              route: Callable[[str], Backend | None] | None = None) -> dict[str, Calls]:
        """One shard's calls by role: `llm` as `LLM` (none for a task that asks no LLM; its
        call kinds routed by `route`: `LLMConfig.router`), and each loaded `extra_models`
        role."""
        return {**({LLM: Calls(llm, route)} if llm is not None else {}),
                **{role: Calls(model) for role, model in (models or {}).items()}}

    @abstractmethod
    def label(self, calls: Mapping[str, Calls], shard: Shard) -> list[dict]:
        """One record per query of `shard`, in order, matching schemas/<name>.schema.json;
        `calls` by role, as `calls` makes them."""

    def settle(self, records: Iterable[dict]) -> dict:
        """What the whole build decides from every labelled record (e.g. SEER's criterion
        weights), recorded in the manifest as `settled`; only called when `settles`."""
        return {}

    def derive(self, records: list[dict], settled: dict) -> dict[str, list[dict]]:
        """One shard's tables from its labelled records: {"data": ..., and one per `tables`}."""
        return {"data": records}

    def labelled(self, tables: Mapping[str, list[dict]]) -> list[dict]:
        """The labelled records a shard's written `tables` were derived from: by default its
        data records (a task whose data drops what `derive` read overrides this)."""
        return copy.deepcopy(tables["data"])

    @classmethod
    def rederive(cls, manifest: dict, tables: Mapping[str, list[dict]]
                 ) -> dict[str, list[dict]] | None:
        """`derive` once more, by the config and settled values the manifest records, on what
        the shard's tables say was labelled (`labelled`); None for a task whose tables are
        its labelled records as they are."""
        if cls.derive is Task.derive:
            return None
        recorded = {"dataset": manifest["dataset"], **(manifest.get("config") or {})}
        task = cls(cls.Config(**{f.name: recorded[f.name] for f in fields(cls.Config)
                                 if f.name in recorded}))
        return task.derive(task.labelled(tables), manifest.get("settled") or {})

    def manifest(self, kind: str = "question") -> dict:
        """The task's part of the manifest for queries of `kind`: templates, decoding
        settings, seed."""
        seeds = {s.seed for s in self.decoding.values()} - {None}
        return {
            "prompt_templates": self.templates(kind),
            "sampling": {name: s.key() for name, s in self.decoding.items()},
            "seed": min(seeds) if seeds else None,
        }
