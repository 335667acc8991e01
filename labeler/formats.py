"""Run and qrels files: runs (TREC or JSONL, one ranking a line) and TREC qrels.

Lines are read as labeler.lines reads them (BOM, CRLF, `.gz`, one-line errors). No score is
NaN or infinite: a JSONL line holding `NaN` or `Infinity` is invalid JSON, and a number that
overflows (`1e999`) or a TREC score `nan`/`inf` is "not a finite number".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Container, Iterable, Iterator
from itertools import islice
from operator import itemgetter
from pathlib import Path

from labeler.errors import InputError, UnknownNameError
from labeler.lines import is_jsonl, iter_query_records, placer, split_lines
from labeler.paths import atomic_file
from labeler.schemas import check, shorten

__all__ = [
    "RANKING_SHAPE",
    "Qrels",
    "Run",
    "are_ids",
    "iter_run",
    "ranking_entry",
]

#: The two layouts of a JSONL run line (a ranking submission line).
RANKING_SHAPE = "{qid, ranking} or {qid, scores}"

RUN_FORMATS = ("trec", "jsonl")

_SCORE = itemgetter(1)

#: TREC run lines whose docids are looked up together
_LINES_A_CHECK = 4096


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
        place = placer(path, None)

        def read(lines: Iterator[tuple[int, str | InputError]]) -> Qrels:
            qrels = cls()
            for line_no, text in lines:
                try:
                    judged, docid, value = _qrels_line(qrels, text)
                except InputError as error:
                    place(error, line_no)  # raises: no problems are collected
                if judged is not None:
                    judged[docid] = value
            return qrels

        return split_lines(path, read)

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
        unknown = _unknown(docids, scores)
        if unknown:
            raise _unknown_passage(next(d for d in scores if d in unknown))
        return qid, scores

    return parse


def _unknown(docids: Container[str] | None, wanted: Iterable[str]) -> set[str]:
    """Those of `wanted` not in `docids`: a container with `missing(docids)` (a corpus) looks
    them up together, any other one at a time."""
    if docids is None:
        return set()
    if hasattr(docids, "missing"):
        return docids.missing(wanted)
    return {d for d in wanted if d not in docids}


def _unknown_passage(docid: str) -> InputError:
    return InputError(f"unknown passage '{docid}' (not in the corpus)", field_name="pid")


def _read_trec_run(
    path: str | Path,
    qids: Container[str] | None,
    docids: Container[str] | None,
    problems: list[InputError] | None,
) -> dict[str, dict[str, float]]:
    place = placer(path, problems)

    def read(lines: Iterator[tuple[int, str | InputError]]) -> dict[str, dict[str, float]]:
        """Each line checked in one pass; with `docids`, a chunk's looked up together."""
        run: dict[str, dict[str, float]] = {}
        while chunk := list(islice(lines, _LINES_A_CHECK)):
            unknown = () if docids is None else _unknown(docids, _docids_of(chunk))
            for line_no, text in chunk:
                try:
                    if not isinstance(text, str):
                        raise text
                    fields = text.split()
                    if len(fields) != 6:
                        if not fields:
                            continue
                        _trec_run_line(fields)  # raises its error
                    qid, _, docid, _, score, _ = fields
                    try:
                        value = float(score)
                    except ValueError:
                        value = _trec_run_line(fields)[2]  # raises its error
                    if not math.isfinite(value):
                        _trec_run_line(fields)
                    docs = run.get(qid)
                    if docs is None:
                        if qids is not None and qid not in qids:
                            raise InputError(f"unknown qid '{qid}'", field_name="qid")
                        docs = run[qid] = {}
                    if docid in docs:
                        raise InputError(f"duplicate docid '{docid}' for qid '{qid}'",
                                         field_name="docid")
                    if docid in unknown:
                        raise _unknown_passage(docid)
                except InputError as error:
                    place(error, line_no)
                    continue
                docs[docid] = value
        return run

    return split_lines(path, read, problems)


def _docids_of(chunk: list[tuple[int, str | InputError]]) -> set[str]:
    """The docids of a chunk's well-formed run lines."""
    return {fields[2] for fields in (text.split() for _, text in chunk if isinstance(text, str))
            if len(fields) == 6}


def _qrels_line(qrels: Qrels, text: str | InputError) -> tuple[dict | None, str, int]:
    """(the judgments of the line's qid, docid, label) of a qrels line; (None, "", 0) for a
    blank line."""
    if not isinstance(text, str):
        raise text
    fields = text.split()
    if len(fields) != 4:
        if not fields:
            return None, "", 0
        raise InputError(f"a qrels line has 4 fields (qid iter docid label), got {len(fields)}")
    qid, _, docid, label = fields
    try:
        value = int(label)
        float(value)  # scored as a float64 gain
    except ValueError:
        raise InputError(f"label '{label}' is not an integer", field_name="label") from None
    except OverflowError:
        raise InputError(f"label {shorten(label, 40)} is too large for a float",
                         field_name="label") from None
    judged = qrels.setdefault(qid, {})
    if docid in judged:
        raise InputError(f"duplicate judgment of '{docid}' for qid '{qid}'")
    return judged, docid, value


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

