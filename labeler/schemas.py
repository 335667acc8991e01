"""Record validation against `schemas/<name>.schema.json`: every problem as a readable line
(`problems`), or the first as the one-line error a command stops with (`check`).

`check` runs on every record a build writes, so it first asks the schema compiled into one
predicate (`labeler.schema_compiler`); only a record that fails it is walked by jsonschema,
whose sorted problems name the first as before."""

from __future__ import annotations

from collections import deque
from functools import cache
from typing import TYPE_CHECKING

from labeler.errors import InputError
from labeler.resources import load_schema, schema_names
from labeler.schema_compiler import Check, Unsupported, compile_schema

if TYPE_CHECKING:  # jsonschema is imported when a record is first checked, not at import
    from jsonschema import Draft202012Validator, ValidationError
    from referencing import Registry


def schema_problems(record: object, schema: str) -> list[tuple[str, str]]:
    """(field path, message) for every way `record` breaks schema `schema`; [] if it is valid.

    The field path reads like Python access, e.g. ``candidates[0].pid``; it is "" for the record
    itself. A missing required property or a single unexpected one is named in the path:

    >>> schema_problems({"qid": "q1"}, "utility")[0]
    ('answers', "'answers' is a required property")
    """
    return sorted((_field(error), error.message) for error in _validator(schema).iter_errors(record))


def check(record: object, schema: str, *, path: str | None = None, line: int | None = None
          ) -> None:
    """InputError with the first way `record` (at `path`, `line`, where known) breaks `schema`:
    the one line a command stops with."""
    valid = _compiled(schema)
    if valid is not None and valid(record):
        return
    found = schema_problems(record, schema)
    if found:
        field, message = found[0]
        raise InputError(shorten(message), path=path, line_no=line, field_name=field or None)


def shorten(message: str, width: int = 160) -> str:
    """`message` cut to `width` characters, an ellipsis marking the cut (a schema message may
    quote a whole record)."""
    return message if len(message) <= width else message[: width - 1] + "…"


@cache
def _compiled(schema: str) -> Check | None:
    """Schema `schema` as one predicate (None: it uses a keyword the compiler lacks)."""
    documents = {spec["$id"]: spec for spec in map(load_schema, schema_names()) if "$id" in spec}
    try:
        return compile_schema(load_schema(schema), documents)
    except Unsupported:
        return None


@cache
def _validator(schema: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    spec = load_schema(schema)
    Draft202012Validator.check_schema(spec)
    return Draft202012Validator(spec, registry=_registry())


@cache
def _registry() -> Registry:
    """Every shipped schema by its `$id`, so one may refer to another's definitions
    (seer-pairs uses seer's scores)."""
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    specs = [load_schema(name) for name in schema_names()]
    return Registry().with_resources(
        (spec["$id"], Resource.from_contents(spec, default_specification=DRAFT202012))
        for spec in specs if "$id" in spec)


def _field(error: ValidationError) -> str:
    """`error.path` as ``a.b[0].c``, extended by the property a required/extra error is about."""
    path = deque(error.path)
    named = _named_property(error)
    if named is not None:
        path.append(named)
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _named_property(error: ValidationError) -> str | None:
    instance = error.instance
    if not isinstance(instance, dict):
        return None
    if error.validator == "required":
        missing = [p for p in error.validator_value if p not in instance]
        return next((p for p in missing if error.message == f"{p!r} is a required property"), None)
    if error.validator == "additionalProperties" and error.validator_value is False:
        extra = [k for k in instance if k not in error.schema.get("properties", {})]
        return extra[0] if len(extra) == 1 else None
    return None
