"""The `review` record's format (schemas/review.schema.json) as code reads it: the verdicts,
what a verdict may be about, and a record of an earlier schema read as the current one.

Schema 1 (review versions written before verdicts named what they judge) had no `about`: its
verdicts were all on utility labels, a query's when `pid` is null, else a candidate's. Such
versions are sealed (their files' sha256 in the manifest), so they are never rewritten: every
reader passes their records through `current`, and a seal carries them forward as schema 2.
"""

from __future__ import annotations

from labeler.resources import load_schema

#: the verdicts, and what a verdict may be about, in the review schema's order
VERDICTS, ABOUT = (tuple(load_schema("review")["properties"][name]["enum"])
                   for name in ("verdict", "about"))


def current(record: dict) -> dict:
    """`record` as the current schema writes it: a schema-1 record (no `about`) gets the one
    its `pid` implies (null: "query", else "candidate")."""
    if "about" in record:
        return record
    return {**record, "about": "query" if record.get("pid") is None else "candidate"}
