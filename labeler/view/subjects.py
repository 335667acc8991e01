"""What a verdict in `labeler view` may be about, and a verdict request checked against it.

A kind that takes verdicts names, per query record, the things a reviewer can judge: the
query's labels as a whole, a utility or rubric candidate (by pid), a SEER extraction (by its
sample number). A request naming anything the viewed version does not hold, of the wrong type
or with a note over the cap is refused with one line, before anything is written.
"""

from __future__ import annotations

import json

from labeler.errors import InputError
from labeler.review_format import VERDICTS
from labeler.view.verdicts import NOTE_BYTES

#: kind -> what its verdicts may be about, besides the query as a whole
JUDGED = {"utility": "candidate", "rubric": "candidate", "seer": "extraction"}
#: a verdict request's fields and their JSON types (pid: a string, or null about a query)
FIELDS = {"version": int, "qid": str, "about": str, "pid": (str, type(None)),
          "verdict": str, "note": str}


def subjects(kind: str, record: dict, tables: dict[str, list[dict]]) -> dict[str, set]:
    """{about: the ids a verdict on it may name} for one query's `record` (and its records of
    the version's other `tables`) of artifact `kind`."""
    if kind == "utility":
        items = {c["pid"] for c in record["candidates"]}
    elif kind == "rubric":
        items = {c["pid"] for c in tables.get("candidates", [])}
    else:
        items = {str(e["sample"]) for e in record["extractions"]}
    return {"query": {None}, JUDGED[kind]: items}


def read_request(body: bytes) -> dict:
    """The verdict request in `body`: a JSON object with exactly FIELDS (note optional), each
    of its type, a verdict of VERDICTS and a note within NOTE_BYTES; InputError otherwise."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested too deep to read
        raise InputError("the request body is not JSON") from None
    if not isinstance(request, dict):
        raise InputError("the request body is not a JSON object")
    request.setdefault("note", "")
    if unknown := sorted(set(request) - set(FIELDS)):
        raise InputError(f"unknown field {unknown[0]!r}", hint=f"fields: {', '.join(FIELDS)}")
    for name, kind in FIELDS.items():
        value = request.get(name, ...)
        if value is ... or isinstance(value, bool) or not isinstance(value, kind):
            wanted = "a string or null" if name == "pid" else \
                "an integer" if kind is int else "a string"
            raise InputError(f"must be {wanted}", field_name=name)
    if request["verdict"] not in VERDICTS:
        raise InputError(f"{request['verdict'][:40]!r} is no verdict", field_name="verdict",
                         hint=f"one of {', '.join(VERDICTS)}")
    if len(request["note"].encode("utf-8")) > NOTE_BYTES:
        raise InputError(f"a note holds at most {NOTE_BYTES} bytes (UTF-8)", field_name="note")
    return request


def check_subject(request: dict, kind: str, record: dict | None,
                  tables: dict[str, list[dict]]) -> None:
    """InputError unless the version's `record` of the request's qid holds what it judges."""
    if record is None:
        raise InputError(f"no query {request['qid'][:80]!r} in this version", field_name="qid")
    allowed = subjects(kind, record, tables)
    about, pid = request["about"], request["pid"]
    if about not in allowed:
        raise InputError(f"a {kind} verdict is not about {about[:40]!r}", field_name="about",
                         hint=f"one of {', '.join(allowed)}")
    if pid not in allowed[about]:
        what = "null" if about == "query" else f"one of this query's {about} ids"
        raise InputError(f"{pid if pid is None else repr(pid[:80])} is not {what}",
                         field_name="pid")
