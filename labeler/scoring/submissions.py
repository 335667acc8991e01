"""Reading and checking submissions: selections, rankings (JSONL or TREC run) and extractions.

Each JSONL line is checked against `schemas/submission-<kind>.schema.json`. Well-formed
lines take a fast path that accepts only what the schema accepts; any other line is judged
by the schema itself, whose first complaint becomes the error message. Rankings (JSONL or
TREC) are read as `labeler.formats.Run`s.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path

from labeler.errors import InputError, UnknownNameError
from labeler.formats import RANKING_SHAPE, Run, are_ids, iter_run, ranking_entry
from labeler.lines import is_jsonl, iter_query_records
from labeler.schemas import check

KINDS = ("selection", "ranking", "extraction")

#: queries of a ranking handed on at once by `read_submission(consume=...)`
CHUNK = 4096

#: The fields that say which kind a JSONL line is.
MARKERS = {"selection": ("selected",), "ranking": ("ranking", "scores"), "extraction": ("evidence",)}


@dataclass
class Submission:
    """One submission file, parsed: one entry per query."""

    path: str
    kind: str  # "selection" | "ranking" | "extraction"
    #: qid -> selected pids (list) | {pid: score} (dict) | evidence (str); ids are strings;
    #: None for a ranking read with `consume`, which got its documents
    entries: dict[str, object] = field(default_factory=dict)
    #: bad lines skipped under `lenient`, each as the error it would have raised
    skipped: list[InputError] = field(default_factory=list)
    #: selected pids dropped under `drop_invalid` (outside their query's pool, or repeated);
    #: None when not dropping
    dropped: int | None = None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (also as a decorator): reading builds millions of
    small acyclic objects, and its repeated full passes over them cost more than the reading."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@gc_paused()
def read_submission(
    path: str | Path,
    *,
    kind: str | None = None,
    known: Collection[str] | None = None,
    lenient: bool = False,
    consume: Callable[[Run], None] | None = None,
    pools: Mapping[str, Collection[str]] | None = None,
    drop_invalid: bool = False,
) -> Submission:
    """Parse a submission; the kind comes from the fields of its lines unless `kind` is given.

    Every line must be a JSON object of that kind with a qid of `known` (when given), each qid
    once; ranking scores must be finite. A file whose first line is not JSON is read as a
    TREC run (`qid Q0 docid rank score tag`), a ranking. The first bad line raises InputError
    with its line number, unless `lenient`, which skips and records it.

    `consume`, for a ranking, is handed its queries' documents as a Run of CHUNK queries at a
    time, as they are read; `entries` then maps each qid to None, so that at most one chunk's
    documents are held at once (a TREC run is read whole first: its lines of one query need
    not be together).

    A selection names each pid once and, where `pools` (qid -> its candidates) is given, only
    pids of its query's pool: the first that does not is a bad line, unless `drop_invalid`,
    which drops such pids and counts them (`Submission.dropped`).
    """
    if kind is not None and kind not in KINDS:
        raise UnknownNameError("submission kind", kind, list(KINDS))
    path = Path(path)
    skipped: list[InputError] = []
    problems = skipped if lenient else None
    if kind == "ranking" or (kind is None and not is_jsonl(path)):
        pairs, kinds = iter_run(path, qids=known, problems=problems), _Kinds("ranking")
    else:
        kinds = _Kinds(kind)
        selections = _Selections(pools, drop_invalid)
        pairs = iter_query_records(path, lambda record: selections.check(kinds, record),
                                   qids=known, problems=problems)
    head = list(islice(pairs, 1))  # its first good line fixes the kind
    pairs = chain(head, pairs)
    if consume is not None and kinds.kind == "ranking":
        entries = _consumed(pairs, consume)
    else:
        entries = Run(pairs) if kinds.kind == "ranking" else dict(pairs)
    sub = Submission(str(path), kinds.kind, entries)
    sub.skipped = skipped
    if drop_invalid and kinds.kind == "selection":
        sub.dropped = selections.dropped
    if not sub.entries:
        if not skipped:
            raise InputError("empty submission: no records", str(path))
        raise InputError(f"no valid records ({len(skipped)} bad lines skipped)", str(path))
    return sub


def _consumed(pairs: Iterator[tuple[str, dict[str, float]]],
              consume: Callable[[Run], None]) -> dict[str, None]:
    """Hand `pairs` to `consume` CHUNK queries at a time; qid -> None for each."""
    entries: dict[str, None] = {}
    chunk = Run()
    for qid, docs in pairs:
        entries[qid] = None
        chunk[qid] = docs
        if len(chunk) == CHUNK:
            consume(chunk)
            chunk = Run()
    if chunk:
        consume(chunk)
    return entries


class _Selections:
    """Checks each selection's pids: each once, each in its query's pool (where pools are
    known); with `drop`, drops the others and counts them instead of raising."""

    def __init__(self, pools: Mapping[str, Collection[str]] | None, drop: bool) -> None:
        self.pools, self.drop, self.dropped = pools, drop, 0

    def check(self, kinds: _Kinds, record: dict) -> tuple[str, object]:
        """(qid, entry) of `record` as `kinds` parses it, a selection's pids checked."""
        qid, entry = kinds.parse(record)
        if kinds.kind != "selection":
            return qid, entry
        pool = None if self.pools is None else self.pools.get(qid)
        kept: dict[str, None] = {}
        for pid in entry:
            problem = f"pid '{pid}' selected twice" if pid in kept else None
            if problem is None and pool is not None and pid not in pool:
                problem = f"pid '{pid}' is not one of query '{qid}''s {len(pool)} candidates"
            if problem is None:
                kept[pid] = None
            elif self.drop:
                self.dropped += 1
            else:
                raise InputError(problem, field_name="selected",
                                 hint="select from the query's candidates, each once, or pass "
                                      "--drop-invalid-pids to drop such pids and count them")
        return qid, list(kept)


class _Kinds:
    """Parses a record by its kind; without a given kind, the first good line fixes it."""

    def __init__(self, kind: str | None) -> None:
        self.kind = kind or ""

    def parse(self, record: dict) -> tuple[str, object]:
        return _PARSE[self.kind_of(record)](record)

    def kind_of(self, record: dict) -> str:
        if self.kind and any(f in record for f in MARKERS[self.kind]):
            return self.kind
        if self.kind:
            raise InputError(f"not a {self.kind} record: expected {_shape(self.kind)}, got "
                             f"fields {', '.join(sorted(record)) or 'none'}")
        present = [k for k, fields in MARKERS.items() if any(f in record for f in fields)]
        if len(present) > 1:
            raise InputError(f"ambiguous record: fields of {' and '.join(present)}; pass --kind")
        if not present:
            raise InputError("cannot tell the kind: expected "
                             + ", ".join(_shape(k) for k in KINDS) + " (or pass --kind)")
        self.kind = present[0]
        return self.kind


def _shape(kind: str) -> str:
    return {"selection": "{qid, selected}", "ranking": RANKING_SHAPE,
            "extraction": "{qid, evidence}"}[kind]


def _fast_selection(record: dict) -> tuple[str, object] | None:
    qid, selected = record.get("qid"), record.get("selected")
    if type(qid) is str and qid and type(selected) is list and are_ids(selected):
        return qid, selected
    return None


def _fast_extraction(record: dict) -> tuple[str, object] | None:
    qid, evidence = record.get("qid"), record.get("evidence")
    return (qid, evidence) if type(qid) is str and qid and type(evidence) is str else None


def _selection(record: dict) -> tuple[str, object]:
    """(qid, selected pids) by the fast path, or judged by the schema and normalised."""
    fast = _fast_selection(record)
    if fast is not None:
        return fast
    check(record, "submission-selection")
    return str(record["qid"]), [str(p) for p in record["selected"]]


def _extraction(record: dict) -> tuple[str, object]:
    """(qid, evidence) by the fast path, or judged by the schema."""
    fast = _fast_extraction(record)
    if fast is not None:
        return fast
    check(record, "submission-extraction")
    return str(record["qid"]), record["evidence"]


#: The fast paths: (qid, entry) for a well-formed record, None to let the schema judge it.
_FAST = {"selection": _fast_selection, "extraction": _fast_extraction}
_PARSE = {"selection": _selection, "ranking": ranking_entry, "extraction": _extraction}
