"""The `features` of a table's records as a dataset card's `dataset_info` states them: the
types its JSON schema declares, so that `datasets.load_dataset` gives a column its declared
type even where every record holds null (left alone, it infers `null`).

The schema gives every type; the records give what a schema leaves open: the keys of an
object whose properties it does not list (rubric's `relevance`, pid -> label), and which
optional properties occur at all (one that no record has stays out, so the loaded records
equal the written ones).

>>> shape = Shape()
>>> shape.add({"reader": "a", "passages_of": "b", "accuracy": None, "queries": 2,
...            "overlap": None, "overlap_queries": 0})
>>> features("compare", shape)[2]
{'name': 'accuracy', 'dtype': 'float64'}
"""

from __future__ import annotations

from functools import cache

from labeler.errors import ArtifactError
from labeler.resources import load_schema, schema_names

#: JSON schema type -> the `datasets` dtype of its values
_DTYPES = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool"}
#: the Python type of an `enum` or `const` value -> its JSON schema type
_VALUE_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number"}


class Shape:
    """The keys the records hold at each place of their nesting (a path of property names,
    "[]" for an array's items), in the order first met."""

    def __init__(self) -> None:
        self.keys: dict[tuple[str, ...], dict[str, None]] = {}

    def add(self, value: object, path: tuple[str, ...] = ()) -> None:
        """Take in one record (or, at `path`, a value inside one)."""
        if isinstance(value, dict):
            self.keys.setdefault(path, {}).update(dict.fromkeys(value))
            for key, item in value.items():
                self.add(item, (*path, key))
        elif isinstance(value, list):
            for item in value:
                self.add(item, (*path, "[]"))


def features(schema: str, shape: Shape) -> list[dict]:
    """The YAML `features` of records of `schema` (schemas/<schema>.schema.json) whose keys
    `shape` took in: [{"name", and "dtype", "list" or "struct"}, ...] in the schema's order."""
    root = load_schema(schema)
    return _Typer(schema, shape).fields(root, root, ())


class _Typer:
    """Walks one schema beside the shape of its records."""

    def __init__(self, schema: str, shape: Shape) -> None:
        self.schema, self.shape = schema, shape

    def fields(self, spec: dict, root: dict, path: tuple[str, ...]) -> list[dict]:
        """The fields of an object: its required properties, those the records hold, then the
        keys the records hold beyond its properties (typed by `additionalProperties`)."""
        spec, root = _resolved(spec, root)
        properties, required = spec.get("properties", {}), spec.get("required", ())
        seen = self.shape.keys.get(path, {})
        named = [(n, s) for n, s in properties.items() if n in required or n in seen]
        extra = [k for k in seen if k not in properties]
        if extra and not isinstance(spec.get("additionalProperties"), dict):
            raise self._error(path, f"the records hold keys it does not type ({extra[0]!r})")
        named += [(key, spec["additionalProperties"]) for key in extra]
        return [{"name": name, **self.feature(s, root, (*path, name))} for name, s in named]

    def feature(self, spec: dict, root: dict, path: tuple[str, ...]) -> dict:
        """{"dtype": ...}, {"list": ...} or {"struct": [...]} of one value."""
        spec, root = _resolved(spec, root)
        branches = [*spec.get("oneOf", ()), *spec.get("anyOf", ())]
        if branches:
            typed = [b for b in branches if _type(_resolved(b, root)[0]) != "null"]
            if len(typed) != 1:
                raise self._error(path, "one type besides null is needed")
            return self.feature(typed[0], root, path)
        kind = _type(spec)
        if kind == "object":
            return {"struct": self.fields(spec, root, path)}
        if kind == "array":
            inner = self.feature(spec.get("items", {}), root, (*path, "[]"))
            return {"list": inner.get("dtype", inner.get("struct", inner))}
        if kind not in _DTYPES:
            raise self._error(path, f"no datasets type for {kind or 'an untyped value'}")
        return {"dtype": _DTYPES[kind]}

    def _error(self, path: tuple[str, ...], why: str) -> ArtifactError:
        where = ".".join(path).replace(".[]", "[]") or "the record"
        return ArtifactError(f"cannot state the type of '{where}': {why}",
                             path=f"schemas/{self.schema}.schema.json")


def _type(spec: dict) -> str | None:
    """The JSON type of a schema's non-null values: its `type`, else its `enum`'s or
    `const`'s; "null" when it allows null alone, None when it says nothing."""
    declared = spec.get("type")
    if declared is None and ("enum" in spec or "const" in spec):
        values = spec.get("enum", [spec.get("const")])
        declared = sorted({_VALUE_TYPES.get(type(v), "null") for v in values})
    if isinstance(declared, list):
        kinds = [k for k in declared if k != "null"] or ["null"]
        return kinds[0] if len(kinds) == 1 else "+".join(kinds)
    return declared


def _resolved(spec: dict, root: dict) -> tuple[dict, dict]:
    """`spec` with its `$ref` followed (within `root`, or into the schema of another `$id`),
    and the schema it now lies in."""
    while "$ref" in spec:
        base, _, pointer = spec["$ref"].partition("#")
        if base:
            root = _by_id()[base]
        spec = root
        for part in filter(None, pointer.split("/")):
            spec = spec[part]
    return spec, root


@cache
def _by_id() -> dict[str, dict]:
    """Every shipped schema by its `$id`."""
    return {s["$id"]: s for s in map(load_schema, schema_names()) if "$id" in s}
