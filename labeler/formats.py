"""One place per file format: JSONL lines, runs (TREC or JSONL) and TREC qrels.

Every text input may start with a UTF-8 byte-order mark and end its lines with CRLF; a `.gz`
file is read through gzip. A bad line is an InputError naming the file and the line; readers
that collect instead of failing (`labeler validate`, `score --lenient`) get the same errors.

No score is NaN or infinite: `NaN` and `Infinity` are not JSON, so a JSONL line holding one
is invalid JSON, and a number that overflows (`1e999`) or a TREC score `nan`/`inf` is "not a
finite number".
"""

from __future__ import annotations

import codecs
import gzip
import json
import math
from collections.abc import Callable, Container, Iterator
from operator import itemgetter
from pathlib import Path
from typing import IO, TypeVar

from labeler.errors import InputError, UnknownNameError
from labeler.paths import atomic_file
from labeler.schemas import check, shorten

__all__ = [
    "RANKING_SHAPE",
    "Qrels",
    "Run",
    "are_ids",
    "is_jsonl",
    "iter_query_records",
    "iter_run",
    "jsonl_lines",
    "ranking_entry",
    "read_jsonl",
]

T = TypeVar("T")

#: The two layouts of a JSONL run line (a ranking submission line).
RANKING_SHAPE = "{qid, ranking} or {qid, scores}"

RUN_FORMATS = ("trec", "jsonl")

_SCORE = itemgetter(1)


def jsonl_lines(
    path: str | Path, *, skip_blank: bool = False
) -> Iterator[tuple[int, dict | None, str | None]]:
    """Yield (line number, record, None) per good line, (line number, None, problem) per bad one.

    A line is bad when it is not UTF-8, not JSON, empty (unless `skip_blank`), nested too
    deeply for Python's parser, or not a JSON object, e.g. ``(3, None, "invalid JSON: Expecting
    ',' delimiter (column 15)")``. A first line that opens a JSON array or object without
    closing it is a pretty-printed JSON document, and is named as such.
    """
    first = True
    for line_no, text, problem in _text_lines(path):
        if problem is None:
            if not text or text.isspace():
                if skip_blank:
                    continue
                problem = "empty line"
            else:
                try:
                    record = _DECODER.decode(text)
                except json.JSONDecodeError as exc:
                    problem = (_pretty_printed(text) if first else None) or \
                        f"invalid JSON: {exc.msg} (column {exc.colno})"
                except ValueError as exc:  # NaN or Infinity
                    problem = f"invalid JSON: {exc}"
                except RecursionError:
                    problem = "invalid JSON: nested too deeply"
                else:
                    if type(record) is dict:
                        yield line_no, record, None
                        first = False
                        continue
                    problem = f"expected a JSON object, got {type(record).__name__}"
            first = False
        yield line_no, None, problem


def read_jsonl(path: str | Path, *, skip_blank: bool = False) -> Iterator[tuple[int, dict]]:
    """(line number, record) per line of a JSONL file; the first bad line raises InputError."""
    for line_no, record, problem in jsonl_lines(path, skip_blank=skip_blank):
        if problem is not None:
            raise InputError(problem, str(path), line_no)
        yield line_no, record


def is_jsonl(path: str | Path) -> bool:
    """Whether the first non-blank line is JSON or starts like an object or an array (else
    TREC, or empty): a pretty-printed JSON array is then refused as one by the JSONL reader."""
    with _open(path) as f:
        for line_no, raw in enumerate(f, 1):
            text = _strip_bom(raw, line_no).decode("utf-8", errors="replace").strip()
            if text:
                return text.startswith(("{", "[")) or _parses(text)
    return False


def iter_query_records(
    path: str | Path,
    parse: Callable[[dict], tuple[str, T]],
    *,
    qids: Container[str] | None = None,
    problems: list[InputError] | None = None,
) -> Iterator[tuple[str, T]]:
    """(qid, entry) per record of a JSONL file of one record per query, one line at a time;
    blank lines are skipped.

    `parse` turns a record into (qid, entry) or raises InputError (message and field). Each qid
    comes once and, when `qids` is given, is one of them. A bad line raises InputError at its
    file and line, or, when `problems` is a list, is appended to it and skipped.
    """
    place = _placer(path, problems)
    first: dict[str, int] = {}
    for line_no, record, problem in jsonl_lines(path, skip_blank=True):
        try:
            if problem is not None:
                raise InputError(problem)
            qid, entry = parse(record)
            if qids is not None and qid not in qids:
                raise InputError(f"unknown qid '{qid}'", field_name="qid")
            if qid in first:
                raise InputError(f"duplicate qid '{qid}' (first on line {first[qid]})",
                                 field_name="qid")
        except InputError as error:
            place(error, line_no)
            continue
        first[qid] = line_no
        yield qid, entry


def iter_run(
    path: str | Path,
    *,
    qids: Container[str] | None = None,
    docids: Container[str] | None = None,
    problems: list[InputError] | None = None,
) -> Iterator[tuple[str, dict[str, float]]]:
    """`Run.from_file`'s (qid, {docid: score}) pairs, a JSONL run's one line at a time (a TREC
    run's lines of one query need not be together, so it is read whole first)."""
    if is_jsonl(path):
        parse = ranking_entry if docids is None else _with_known_docids(docids)
        yield from iter_query_records(path, parse, qids=qids, problems=problems)
    else:
        yield from _read_trec_run(path, qids, docids, problems).items()


class Run(dict[str, dict[str, float]]):
    """qid -> {docid: score}, higher is better; queries and documents in the order read.

    Read from a TREC run (`qid Q0 docid rank score tag`; ranks are ignored, as trec_eval does)
    or JSONL, one line per query: `{"qid", "ranking": [docid, ...]}` (best first, scored
    n, n-1, ..., 1) or `{"qid", "scores": {docid: score}}`.

    >>> Run({"q1": {"d1": 0.5, "d2": 0.9}}).ranking("q1")
    [('d2', 0.9), ('d1', 0.5)]
    """

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        qids: Container[str] | None = None,
        docids: Container[str] | None = None,
        problems: list[InputError] | None = None,
    ) -> Run:
        """Read a TREC or JSONL run (told apart by the first line); every qid must be one of
        `qids` and every docid one of `docids` where given. A bad line raises InputError at its
        file and line, or, when `problems` is a list, is appended to it and skipped."""
        return cls(iter_run(path, qids=qids, docids=docids, problems=problems))

    def ranking(self, qid: str) -> list[tuple[str, float]]:
        """(docid, score) of `qid`, best first, ties in the order read; [] for an absent qid."""
        return sorted(self.get(qid, {}).items(), key=_SCORE, reverse=True)

    def save(self, path: str | Path, *, format: str = "trec", tag: str = "labeler") -> Path:
        """Write the run atomically as TREC (`tag` in the last column; scores in full, so that
        reading it back gives the same run) or as JSONL `{qid, scores}` lines."""
        if format not in RUN_FORMATS:
            raise UnknownNameError("run format", format, list(RUN_FORMATS))
        path = Path(path)
        with atomic_file(path) as f:
            for qid in self:
                if format == "jsonl":
                    line = {"qid": qid, "scores": {d: float(s) for d, s in self[qid].items()}}
                    f.write(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n")
                    continue
                for rank, (docid, score) in enumerate(self.ranking(qid), 1):
                    f.write(f"{qid} Q0 {docid} {rank} {float(score)!r} {tag}\n")
        return path


class Qrels(dict[str, dict[str, int]]):
    """qid -> {docid: label}: graded integer judgments, label > 0 meaning relevant.

    Read from and saved as TREC qrels, `qid iter docid label` per line (iter is ignored).
    """

    @classmethod
    def from_file(cls, path: str | Path) -> Qrels:
        """Read TREC qrels; the first bad line raises InputError at its file and line."""
        qrels = cls()
        for line_no, text, problem in _text_lines(path):
            if problem is not None:
                raise InputError(problem, str(path), line_no)
            fields = text.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise InputError(f"a qrels line has 4 fields (qid iter docid label), got "
                                 f"{len(fields)}", str(path), line_no)
            qid, _, docid, label = fields
            try:
                value = int(label)
                float(value)  # scored as a float64 gain
            except ValueError:
                raise InputError(f"label '{label}' is not an integer", str(path), line_no,
                                 "label") from None
            except OverflowError:
                raise InputError(f"label {shorten(label, 40)} is too large for a float",
                                 str(path), line_no, "label") from None
            judged = qrels.setdefault(qid, {})
            if docid in judged:
                raise InputError(f"duplicate judgment of '{docid}' for qid '{qid}'", str(path),
                                 line_no)
            judged[docid] = value
        return qrels

    def save(self, path: str | Path) -> Path:
        """Write TREC qrels atomically (iter 0)."""
        path = Path(path)
        with atomic_file(path) as f:
            for qid, judged in self.items():
                for docid, label in judged.items():
                    f.write(f"{qid} 0 {docid} {label}\n")
        return path


def ranking_entry(record: dict) -> tuple[str, dict[str, float]]:
    """One JSONL run line -> (qid, {docid: score}); InputError (message, field) if it is bad.

    Well-formed lines take a fast path that accepts only what
    `schemas/submission-ranking.schema.json` accepts; any other line is judged by the schema.

    >>> ranking_entry({"qid": "q1", "ranking": ["d7", "d3"]})
    ('q1', {'d7': 2.0, 'd3': 1.0})
    """
    fast = _fast_ranking(record)
    if fast is not None:
        return fast
    if "ranking" not in record and "scores" not in record:
        raise InputError(f"not a ranking record: expected {RANKING_SHAPE}, got fields "
                         f"{', '.join(sorted(record)) or 'none'}")
    if "ranking" in record and "scores" in record:
        raise InputError("give either 'ranking' or 'scores', not both")
    check(record, "submission-ranking")
    qid = str(record["qid"])
    if "ranking" in record:
        ids = [str(p) for p in record["ranking"]]
        if len(set(ids)) < len(ids):
            raise InputError("duplicate passage ids", field_name="ranking")
        return qid, {p: float(len(ids) - i) for i, p in enumerate(ids)}
    return qid, {str(p): _finite(s, f"scores.{p}") for p, s in record["scores"].items()}


def are_ids(values: list) -> bool:
    """Whether every value is a non-empty string: a list of ids that needs no normalising."""
    return set(map(type, values)) <= {str} and "" not in values


def _fast_ranking(record: dict) -> tuple[str, dict[str, float]] | None:
    qid = record.get("qid")
    if type(qid) is not str or not qid or ("ranking" in record) == ("scores" in record):
        return None
    if "ranking" in record:
        ids = record["ranking"]
        if type(ids) is not list or not are_ids(ids):
            return None
        scores = {p: float(len(ids) - i) for i, p in enumerate(ids)}
        return (qid, scores) if len(scores) == len(ids) else None
    scores = record["scores"]
    # A sum that overflows sends finite scores down the slow path, which checks each one.
    if type(scores) is not dict or "" in scores or not _numbers(scores.values()):
        return None
    return qid, scores


def _numbers(values) -> bool:
    """All ints or floats (not bools) with a finite sum, so none is NaN, infinite or an int too
    large for a float."""
    try:
        return set(map(type, values)) <= {int, float} and math.isfinite(sum(values))
    except OverflowError:  # an int sum beyond float range
        return False


def _finite(value: float, field_name: str) -> float:
    """`value` as a finite float, else InputError at `field_name`."""
    try:
        number = float(value)
    except OverflowError:  # an int beyond a float's range
        raise InputError(f"score {shorten(str(value), 40)} is too large for a float",
                         field_name=field_name) from None
    if not math.isfinite(number):
        raise InputError(f"score {number} is not a finite number", field_name=field_name)
    return number


def _with_known_docids(docids: Container[str]) -> Callable[[dict], tuple[str, dict[str, float]]]:
    def parse(record: dict) -> tuple[str, dict[str, float]]:
        qid, scores = ranking_entry(record)
        unknown = next((d for d in scores if d not in docids), None)
        if unknown is not None:
            raise _unknown_passage(unknown)
        return qid, scores

    return parse


def _unknown_passage(docid: str) -> InputError:
    return InputError(f"unknown passage '{docid}' (not in the corpus)", field_name="pid")


def _read_trec_run(
    path: str | Path,
    qids: Container[str] | None,
    docids: Container[str] | None,
    problems: list[InputError] | None,
) -> dict[str, dict[str, float]]:
    place = _placer(path, problems)
    run: dict[str, dict[str, float]] = {}
    for line_no, text, problem in _text_lines(path):
        try:
            if problem is not None:
                raise InputError(problem)
            fields = text.split()
            if not fields:
                continue
            qid, docid, score = _trec_run_line(fields)
            if qid not in run:
                if qids is not None and qid not in qids:
                    raise InputError(f"unknown qid '{qid}'", field_name="qid")
                run[qid] = {}
            docs = run[qid]
            if docid in docs:
                raise InputError(f"duplicate docid '{docid}' for qid '{qid}'", field_name="docid")
            if docids is not None and docid not in docids:
                raise _unknown_passage(docid)
        except InputError as error:
            place(error, line_no)
            continue
        docs[docid] = score
    return run


def _trec_run_line(fields: list[str]) -> tuple[str, str, float]:
    if len(fields) != 6:
        raise InputError(f"a TREC run line has 6 fields (qid Q0 docid rank score tag), got "
                         f"{len(fields)}")
    qid, _, docid, _, score, _ = fields
    try:
        value = float(score)
    except ValueError:
        raise InputError(f"score '{score}' is not a number", field_name="score") from None
    if not math.isfinite(value):
        raise InputError(f"score {score} is not a finite number", field_name="score")
    return qid, docid, value


def _text_lines(path: str | Path) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, text, None) per UTF-8 line, without its LF or CRLF end; (line number, None,
    problem) per line that is not UTF-8. A byte-order mark before the first line is dropped."""
    with _open(path) as f:
        for line_no, raw in enumerate(f, 1):
            try:
                text = _strip_bom(raw, line_no).decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                yield line_no, None, f"not UTF-8: {exc.reason} at byte {exc.start}"
                continue
            yield line_no, text, None


def _open(path: str | Path) -> IO[bytes]:
    path = Path(path)
    try:
        return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
    except FileNotFoundError:
        raise InputError("no such file", str(path)) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected a file", str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", str(path)) from None


def _strip_bom(raw: bytes, line_no: int) -> bytes:
    return raw[len(codecs.BOM_UTF8):] if line_no == 1 and raw.startswith(codecs.BOM_UTF8) else raw


def _placer(
    path: str | Path, problems: list[InputError] | None
) -> Callable[[InputError, int], None]:
    """Put an error at `path`:line, then raise it, or append it to `problems` when a list."""

    def place(error: InputError, line_no: int) -> None:
        error.path, error.line_no = str(path), line_no
        if problems is None:
            raise error
        problems.append(error)

    return place


def _pretty_printed(text: str) -> str | None:
    """The problem of a first line that opens a JSON array or object and leaves it open."""
    start = text.strip()[:1]
    if start == "[":
        return ("a JSON array, not JSON Lines: write one JSON object per line "
                "(e.g. jq -c '.[]' FILE)")
    if start == "{" and not text.rstrip().endswith("}"):
        return "a pretty-printed JSON object, not JSON Lines: write each object on one line " \
               "(e.g. jq -c . FILE)"
    return None


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


#: One decoder for every line (json.loads with options builds a new one per call).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
