"""A JSON Schema (draft 2020-12) compiled into one Python predicate: whether a record is valid,
in one pass that stops at the first problem and builds no error objects.

It covers the keywords the shipped schemas use; a schema with any other keyword is refused
(`Unsupported`), and its records are checked by jsonschema alone. `labeler.schemas` names a
record's problems with jsonschema only once this predicate has said there is one, so the
messages are jsonschema's, and a valid record costs one walk of plain Python checks (a full
jsonschema validation took ~1.9 ms for a utility record).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

#: keywords that say nothing about validity
_NOTES = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description", "version",
                    "examples", "default", "deprecated"})


class Unsupported(Exception):
    """The schema uses a keyword this compiler does not know."""


def compile_schema(schema: Mapping, documents: Mapping[str, Mapping]) -> Check:
    """A predicate equal to jsonschema's `is_valid` for `schema`, whose `$ref`s name parts of
    it or of `documents` (schemas by their `$id`); each part is compiled once."""
    base = schema.get("$id", "")
    documents = {**documents, base: schema}
    compiled: dict[tuple[str, str], Check] = {}

    def refs_from(document: str) -> Callable[[str], Check]:
        def ref(target: str) -> Check:
            uri, _, pointer = target.partition("#")
            key = (uri or document, pointer)
            if key not in compiled:
                compiled[key] = lambda value: compiled[key](value)  # recursion: late bound
                compiled[key] = _compile(_pointed(documents[key[0]], pointer),
                                         refs_from(key[0]))
            return compiled[key]
        return ref

    return _compile(schema, refs_from(base))


def _pointed(document: Mapping, pointer: str) -> Mapping | bool:
    """The part of `document` a JSON pointer ("/$defs/id") names."""
    part = document
    for token in filter(None, pointer.split("/")):
        token = token.replace("~1", "/").replace("~0", "~")
        part = part[int(token)] if isinstance(part, list) else part[token]
    return part


def _compile(schema: Mapping | bool, ref: Callable[[str], Check]) -> Check:
    if schema is True or schema == {}:
        return lambda value: True
    if schema is False:
        return lambda value: False
    unknown = schema.keys() - _NOTES - _KEYWORDS.keys() - {"then", "else"}
    if unknown:
        raise Unsupported(", ".join(sorted(unknown)))
    checks = [_KEYWORDS[key](schema, ref) for key in _KEYWORDS if key in schema]
    checks = [check for check in checks if check is not None]
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": _is_integer,
}


def _equal(one: Any, other: Any) -> bool:
    """JSON equality as jsonschema has it: a boolean is not a number, 1 equals 1.0."""
    if isinstance(one, bool) or isinstance(other, bool):
        return isinstance(one, bool) and isinstance(other, bool) and one == other
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(_equal(one[k], other[k]) for k in one)
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(map(_equal, one, other))
    if _is_number(one) and _is_number(other):
        return one == other
    return type(one) is type(other) and one == other


def _type(schema: Mapping, ref) -> Check:
    names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    checks = [_TYPES[name] for name in names]
    if len(checks) == 1:
        return checks[0]
    return lambda value: any(check(value) for check in checks)


def _bound(keyword: str, holds: Callable[[Any, Any], bool]):
    def make(schema: Mapping, ref) -> Check:
        limit = schema[keyword]
        return lambda value: not _is_number(value) or holds(value, limit)
    return make


def _sized(kind: type, keyword: str, holds: Callable[[int, int], bool]):
    def make(schema: Mapping, ref) -> Check:
        limit = schema[keyword]
        return lambda value: not isinstance(value, kind) or holds(len(value), limit)
    return make


def _pattern(schema: Mapping, ref) -> Check:
    search = re.compile(schema["pattern"]).search
    return lambda value: not isinstance(value, str) or search(value) is not None


def _enum(schema: Mapping, ref) -> Check:
    options = schema["enum"]
    return lambda value: any(_equal(value, option) for option in options)


def _const(schema: Mapping, ref) -> Check:
    expected = schema["const"]
    return lambda value: _equal(value, expected)


def _required(schema: Mapping, ref) -> Check:
    names = schema["required"]
    return lambda value: not isinstance(value, dict) or all(name in value for name in names)


def _properties(schema: Mapping, ref) -> Check:
    checks = {name: _compile(sub, ref) for name, sub in schema["properties"].items()}

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        return all(checks[name](value[name]) for name in checks.keys() & value.keys())
    return check


def _additional(schema: Mapping, ref) -> Check:
    known = set(schema.get("properties", {}))
    extra = _compile(schema["additionalProperties"], ref)
    return lambda value: not isinstance(value, dict) or all(
        extra(item) for name, item in value.items() if name not in known)


def _property_names(schema: Mapping, ref) -> Check:
    check = _compile(schema["propertyNames"], ref)
    return lambda value: not isinstance(value, dict) or all(map(check, value))


def _items(schema: Mapping, ref) -> Check:
    check = _compile(schema["items"], ref)
    return lambda value: not isinstance(value, list) or all(map(check, value))


def _unique(schema: Mapping, ref) -> Check | None:
    if not schema["uniqueItems"]:
        return None

    def check(value: Any) -> bool:
        if not isinstance(value, list):
            return True
        return not any(_equal(a, b) for i, a in enumerate(value) for b in value[i + 1:])
    return check


def _any_of(schema: Mapping, ref) -> Check:
    checks = [_compile(sub, ref) for sub in schema["anyOf"]]
    return lambda value: any(check(value) for check in checks)


def _one_of(schema: Mapping, ref) -> Check:
    checks = [_compile(sub, ref) for sub in schema["oneOf"]]
    return lambda value: sum(1 for check in checks if check(value)) == 1


def _not(schema: Mapping, ref) -> Check:
    check = _compile(schema["not"], ref)
    return lambda value: not check(value)


def _if(schema: Mapping, ref) -> Check:
    condition = _compile(schema["if"], ref)
    then = _compile(schema.get("then", True), ref)
    otherwise = _compile(schema.get("else", True), ref)
    return lambda value: then(value) if condition(value) else otherwise(value)


def _ref(schema: Mapping, ref) -> Check:
    return ref(schema["$ref"])


#: keyword -> its compiler, in the order the checks run (cheap and telling ones first)
_KEYWORDS: dict[str, Callable[[Mapping, Callable[[str], Check]], Check | None]] = {
    "type": _type,
    "const": _const,
    "enum": _enum,
    "required": _required,
    "minimum": _bound("minimum", lambda v, limit: v >= limit),
    "maximum": _bound("maximum", lambda v, limit: v <= limit),
    "exclusiveMinimum": _bound("exclusiveMinimum", lambda v, limit: v > limit),
    "exclusiveMaximum": _bound("exclusiveMaximum", lambda v, limit: v < limit),
    "minLength": _sized(str, "minLength", lambda n, limit: n >= limit),
    "maxLength": _sized(str, "maxLength", lambda n, limit: n <= limit),
    "pattern": _pattern,
    "minItems": _sized(list, "minItems", lambda n, limit: n >= limit),
    "maxItems": _sized(list, "maxItems", lambda n, limit: n <= limit),
    "minProperties": _sized(dict, "minProperties", lambda n, limit: n >= limit),
    "maxProperties": _sized(dict, "maxProperties", lambda n, limit: n <= limit),
    "uniqueItems": _unique,
    "properties": _properties,
    "additionalProperties": _additional,
    "propertyNames": _property_names,
    "items": _items,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
    "$ref": _ref,
}

__all__ = ["Unsupported", "compile_schema"]
