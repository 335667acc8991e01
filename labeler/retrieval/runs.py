"""Run files: read a TREC run or a JSONL run, write a TREC run.

TREC: one line per (query, passage): `qid Q0 pid rank score tag`.
JSONL: one line per query: `{"qid": ..., "ranking": [pid, ...]}` (best first) or
`{"qid": ..., "scores": {pid: score, ...}}`.
"""

from __future__ import annotations

import json
from collections.abc import Container
from pathlib import Path

from labeler.errors import InputError
from labeler.paths import atomic_file

#: qid -> [(pid, score)], best first.
Run = dict[str, list[tuple[str, float]]]


def read_run(path: str | Path, *, qids: Container[str], pids: Container[str]) -> Run:
    """Read a TREC or JSONL run; every qid and pid must be known (InputError at file:line)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such run file", str(path), hint="pass a TREC or JSONL run")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    first = next((line.lstrip() for line in lines if line.strip()), "")
    parse = _jsonl_line if first.startswith("{") else _trec_line
    scored: dict[str, dict[str, float]] = {}
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        for qid, pid, score in parse(line, path, line_no):
            if qid not in qids:
                raise InputError(f"unknown query '{qid}' (not in the dataset)", str(path), line_no,
                                 "qid")
            if pid not in pids:
                raise InputError(f"unknown passage '{pid}' (not in the corpus)", str(path),
                                 line_no, "pid")
            if pid in scored.setdefault(qid, {}):
                raise InputError(f"passage '{pid}' listed twice for query '{qid}'", str(path),
                                 line_no, "pid")
            scored[qid][pid] = score
    return {qid: sorted(ranked.items(), key=lambda kv: -kv[1]) for qid, ranked in scored.items()}


def write_trec(run: Run, path: str | Path, *, tag: str) -> Path:
    """Write `run` as a TREC run file, atomically (a temp file renamed into place)."""
    path = Path(path)
    with atomic_file(path) as f:
        for qid, ranked in run.items():
            for rank, (pid, score) in enumerate(ranked, 1):
                f.write(f"{qid} Q0 {pid} {rank} {score:.6f} {tag}\n")
    return path


def _trec_line(line: str, path: Path, line_no: int) -> list[tuple[str, str, float]]:
    cols = line.split()
    if len(cols) != 6:
        raise InputError(f"expected 6 columns 'qid Q0 pid rank score tag', got {len(cols)}",
                         str(path), line_no)
    try:
        score = float(cols[4])
    except ValueError:
        raise InputError(f"score '{cols[4]}' is not a number", str(path), line_no,
                         "score") from None
    return [(cols[0], cols[2], score)]


def _jsonl_line(line: str, path: Path, line_no: int) -> list[tuple[str, str, float]]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", str(path), line_no) from None
    if not isinstance(record, dict) or not isinstance(record.get("qid"), (str, int)):
        raise InputError("missing or non-string qid", str(path), line_no, "qid")
    qid = str(record["qid"])
    if isinstance(record.get("ranking"), list):
        ranking = record["ranking"]
        if not all(isinstance(pid, (str, int)) for pid in ranking):
            raise InputError("ranking must be a list of passage ids", str(path), line_no,
                             "ranking")
        return [(qid, str(pid), float(len(ranking) - i)) for i, pid in enumerate(ranking)]
    if isinstance(record.get("scores"), dict):
        scores = record["scores"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   for v in scores.values()):
            raise InputError("scores must map passage ids to numbers", str(path), line_no,
                             "scores")
        return [(qid, str(pid), float(score)) for pid, score in scores.items()]
    raise InputError("needs 'ranking' (list of pids) or 'scores' ({pid: score})", str(path),
                     line_no, "ranking")
