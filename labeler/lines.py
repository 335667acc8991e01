"""Input files read line by line: UTF-8 text lines and JSONL records.

Every text input may start with a UTF-8 byte-order mark and end its lines with CRLF; a `.gz`
file is read through gzip. A bad line is an InputError naming the file and the line; readers
that collect instead of failing (`labeler validate`, `score --lenient`) get the same errors.
`NaN` and `Infinity` are not JSON, so a JSONL line holding one is invalid JSON.
"""

from __future__ import annotations

import codecs
import gzip
import json
from collections.abc import Callable, Container, Iterator
from pathlib import Path
from typing import IO, TypeVar

from labeler.errors import InputError

__all__ = [
    "is_jsonl",
    "iter_query_records",
    "jsonl_lines",
    "placer",
    "read_jsonl",
    "text_lines",
]

T = TypeVar("T")


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
    for line_no, text, problem in text_lines(path):
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
    place = placer(path, problems)
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



def text_lines(path: str | Path) -> Iterator[tuple[int, str | None, str | None]]:
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


def split_lines(path: str | Path, read: Callable[[Iterator[tuple[int, str | InputError]]], T],
                problems: list | None = None) -> T:
    """`read(numbered lines)`, each line (its white-space-split fields are all a reader
    needs: its end is kept) numbered from 1, a byte-order mark before the first dropped. The
    file is decoded as it is read, in C; where it is not all UTF-8 it is read again line by
    line, each line that is not given as its InputError (and what `problems` gained meanwhile
    is dropped), so `read` meets lines and problems in file order either way."""
    kept = None if problems is None else len(problems)
    try:
        with _open_text(path) as f:
            return read(enumerate(f, 1))
    except UnicodeDecodeError:
        if problems is not None:
            del problems[kept:]
        return read((line_no, InputError(problem) if text is None else text)
                    for line_no, text, problem in text_lines(path))


def _open_text(path: str | Path) -> IO[str]:
    path = Path(path)
    try:  # lines end at LF only, as text_lines splits them
        if path.suffix == ".gz":
            return gzip.open(path, "rt", encoding="utf-8-sig", newline="\n")
        return path.open(encoding="utf-8-sig", newline="\n")
    except FileNotFoundError:
        raise InputError("no such file", str(path)) from None


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


def placer(
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
