"""Reading and checking submissions: selections, rankings (JSONL or TREC run) and extractions.

Each JSONL line is checked against `schemas/submission-<kind>.schema.json`. Well-formed
lines take a fast path that accepts only what the schema accepts; any other line is judged
by the schema itself, whose first complaint becomes the error message.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from labeler.errors import InputError, UnknownNameError

KINDS = ("selection", "ranking", "extraction")

#: The fields that say which kind a JSONL line is.
MARKERS = {"selection": ("selected",), "ranking": ("ranking", "scores"), "extraction": ("evidence",)}


@dataclass
class Submission:
    """One submission file, parsed: one entry per query."""

    path: str
    kind: str  # "selection" | "ranking" | "extraction"
    #: qid -> selected pids (list) | {pid: score} (dict) | evidence (str); ids are strings
    entries: dict[str, object] = field(default_factory=dict)
    #: qid -> the (first) line it was read from
    lines: dict[str, int] = field(default_factory=dict)
    #: bad lines skipped under `lenient`, each as the error it would have raised
    skipped: list[InputError] = field(default_factory=list)


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
) -> Submission:
    """Parse a submission; the kind comes from the fields of its lines unless `kind` is given.

    Every line must be a JSON object of that kind with a qid of `known` (when given), each qid
    once; ranking scores must be finite. A file whose first line is not JSON is read as a
    TREC run (`qid Q0 docid rank score tag`), a ranking. The first bad line raises InputError
    with its line number, unless `lenient`, which skips and records it.
    """
    if kind is not None and kind not in KINDS:
        raise UnknownNameError("submission kind", kind, list(KINDS))
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read submission: {exc}", str(path)) from exc
    lines = text.split("\n")
    first = next((line.lstrip() for line in lines if line.strip()), None)
    if first is None:
        raise InputError("empty submission: no records", str(path))
    reader = _Reader(str(path), kind, known, lenient)
    if first.startswith("{") or _is_json(first) or kind not in (None, "ranking"):
        reader.read_jsonl(lines)
    else:
        reader.read_trec(lines)
    sub = reader.submission
    if not sub.entries:
        why = f"{len(sub.skipped)} bad lines skipped" if sub.skipped else "no records"
        raise InputError(f"no valid records ({why})", str(path))
    return sub


class _Reader:
    """Line-by-line parsing with one error policy (raise, or skip and count under lenient)."""

    def __init__(self, path: str, kind: str | None, known, lenient: bool) -> None:
        self.submission = Submission(path, kind or "")
        self.known = known
        self.lenient = lenient

    def fail(self, message: str, line_no: int, field_name: str | None = None) -> None:
        error = InputError(message, self.submission.path, line_no, field_name)
        if not self.lenient:
            raise error
        self.submission.skipped.append(error)

    def check_qid(self, qid: str, line_no: int) -> bool:
        if self.known is not None and qid not in self.known:
            self.fail(f"unknown qid '{qid}': not in the reference", line_no, "qid")
            return False
        return True

    def read_jsonl(self, lines: list[str]) -> None:
        sub = self.submission
        for line_no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                self.fail(f"malformed JSON: {exc.msg} at column {exc.colno}", line_no)
                continue
            if not isinstance(record, dict):
                self.fail(f"expected a JSON object, got {type(record).__name__}", line_no)
                continue
            kind = self.kind_of(record, line_no)
            if kind is None:
                continue
            parsed = _FAST[kind](record) or self.slow_path(record, kind, line_no)
            if parsed is None:
                continue
            qid, entry = parsed
            if not self.check_qid(qid, line_no):
                continue
            if qid in sub.entries:
                self.fail(f"duplicate qid '{qid}' (first on line {sub.lines[qid]})", line_no, "qid")
                continue
            sub.entries[qid] = entry
            sub.lines[qid] = line_no

    def kind_of(self, record: dict, line_no: int) -> str | None:
        """The record's kind; fixes the file's kind on its first good line."""
        sub = self.submission
        if sub.kind and any(f in record for f in MARKERS[sub.kind]):
            return sub.kind
        present = [k for k, fields in MARKERS.items() if any(f in record for f in fields)]
        if sub.kind:
            self.fail(f"not a {sub.kind} record: expected {_shape(sub.kind)}, got fields "
                      f"{', '.join(sorted(record)) or 'none'}", line_no)
        elif len(present) == 1:
            sub.kind = present[0]
            return sub.kind
        elif present:
            self.fail(f"ambiguous record: fields of {' and '.join(present)}; pass --kind",
                      line_no)
        else:
            self.fail("cannot tell the kind: expected "
                      + ", ".join(_shape(k) for k in KINDS) + " (or pass --kind)", line_no)
        return None

    def slow_path(self, record: dict, kind: str, line_no: int) -> tuple[str, object] | None:
        """Judge a record the fast path refused by its schema; normalise it if valid."""
        from labeler.artifacts import schema_problems

        if kind == "ranking" and "ranking" in record and "scores" in record:
            self.fail("give either 'ranking' or 'scores', not both", line_no)
            return None
        found = schema_problems(record, f"submission-{kind}")
        if found:
            where, message = found[0]
            self.fail(_short(message), line_no, where or None)
            return None
        qid = str(record["qid"])
        if kind == "selection":
            return qid, [str(p) for p in record["selected"]]
        if kind == "extraction":
            return qid, record["evidence"]
        if "ranking" in record:
            ids = [str(p) for p in record["ranking"]]
            if len(set(ids)) < len(ids):
                self.fail("duplicate passage ids", line_no, "ranking")
                return None
            return qid, {p: float(len(ids) - i) for i, p in enumerate(ids)}
        scores = {str(p): float(s) for p, s in record["scores"].items()}
        bad = next((p for p, s in scores.items() if not math.isfinite(s)), None)
        if bad is not None:
            self.fail(f"score {scores[bad]} is not a finite number", line_no, f"scores.{bad}")
            return None
        return qid, scores

    def read_trec(self, lines: list[str]) -> None:
        """A TREC run: `qid Q0 docid rank score tag`; ranks are ignored, as trec_eval does."""
        sub = self.submission
        sub.kind = "ranking"
        for line_no, line in enumerate(lines, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 6:
                self.fail(f"a TREC run line has 6 fields (qid Q0 docid rank score tag), got "
                          f"{len(fields)}", line_no)
                continue
            qid, _, docid, _, score, _ = fields
            try:
                value = float(score)
            except ValueError:
                self.fail(f"score '{score}' is not a number", line_no, "score")
                continue
            if not math.isfinite(value):
                self.fail(f"score {score} is not a finite number", line_no, "score")
                continue
            if qid not in sub.entries:
                if not self.check_qid(qid, line_no):
                    continue
                sub.entries[qid] = {}
                sub.lines[qid] = line_no
            docs = sub.entries[qid]
            if docid in docs:
                self.fail(f"duplicate docid '{docid}' for qid '{qid}'", line_no, "docid")
                continue
            docs[docid] = value


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _shape(kind: str) -> str:
    return {"selection": "{qid, selected}", "ranking": "{qid, ranking} or {qid, scores}",
            "extraction": "{qid, evidence}"}[kind]


def _short(message: str, width: int = 160) -> str:
    return message if len(message) <= width else message[: width - 1] + "…"


def _fast_selection(record: dict) -> tuple[str, object] | None:
    qid, selected = record.get("qid"), record.get("selected")
    if type(qid) is str and qid and type(selected) is list and _ids(selected):
        return qid, selected
    return None


def _fast_ranking(record: dict) -> tuple[str, object] | None:
    qid = record.get("qid")
    if type(qid) is not str or not qid or ("ranking" in record) == ("scores" in record):
        return None
    if "ranking" in record:
        ids = record["ranking"]
        if type(ids) is not list or not _ids(ids):
            return None
        scores = {p: float(len(ids) - i) for i, p in enumerate(ids)}
        return (qid, scores) if len(scores) == len(ids) else None
    scores = record["scores"]
    # A sum that overflows sends finite scores down the slow path, which checks each one.
    if type(scores) is not dict or "" in scores or not _numbers(scores.values()):
        return None
    return qid, scores


def _fast_extraction(record: dict) -> tuple[str, object] | None:
    qid, evidence = record.get("qid"), record.get("evidence")
    return (qid, evidence) if type(qid) is str and qid and type(evidence) is str else None


def _ids(values: list) -> bool:
    """All non-empty strings."""
    return set(map(type, values)) <= {str} and "" not in values


def _numbers(values) -> bool:
    """All ints or floats (not bools) with a finite sum, so none is NaN or infinite."""
    return set(map(type, values)) <= {int, float} and math.isfinite(sum(values))


_FAST = {"selection": _fast_selection, "ranking": _fast_ranking, "extraction": _fast_extraction}
