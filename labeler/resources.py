"""Where the JSON Schemas and dataset-card templates live at run time.

The top-level `schemas/` and `cards/` folders are the one source of truth. `labeler/schemas`
and `labeler/cards` are relative symlinks to them, so the same path works from a source
checkout, an editable install and a built wheel (which holds real copies of the files).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from labeler.errors import UnknownNameError

_ROOT = Path(__file__).parent
SCHEMAS = _ROOT / "schemas"
CARDS = _ROOT / "cards"

SCHEMA_SUFFIX = ".schema.json"
CARD_SUFFIX = ".md.j2"


def schema_names() -> list[str]:
    """Names of the record schemas shipped with labeler, e.g. ["manifest", "utility"]."""
    return sorted(p.name.removesuffix(SCHEMA_SUFFIX) for p in SCHEMAS.glob(f"*{SCHEMA_SUFFIX}"))


def schema_path(name: str) -> Path:
    """`schemas/<name>.schema.json`; UnknownNameError listing the schemas if there is none."""
    path = SCHEMAS / f"{name}{SCHEMA_SUFFIX}"
    if not path.is_file():
        raise UnknownNameError("schema", name, schema_names())
    return path


@cache
def load_schema(name: str) -> dict:
    """The parsed JSON Schema `name` (read once per process)."""
    return json.loads(schema_path(name).read_text(encoding="utf-8"))


def card_path(artifact: str) -> Path:
    """`cards/<artifact>.md.j2`; UnknownNameError listing the card templates if there is none."""
    path = CARDS / f"{artifact}{CARD_SUFFIX}"
    if not path.is_file():
        names = sorted(p.name.removesuffix(CARD_SUFFIX) for p in CARDS.glob(f"*{CARD_SUFFIX}"))
        raise UnknownNameError("card template", artifact, names)
    return path
