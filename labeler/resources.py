"""Where the JSON Schemas and dataset-card templates live at run time.

The top-level `schemas/` and `cards/` folders are the one source of truth. `labeler/schemas`
and `labeler/cards` are relative symlinks to them, so the same path works from a source
checkout, an editable install and a built wheel (which holds real copies of the files). A
plugin package that adds a task holds its kind's files in its own `schemas/` and `cards/`.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path

from labeler.errors import UnknownNameError

_ROOT = Path(__file__).parent
SCHEMAS = _ROOT / "schemas"
CARDS = _ROOT / "cards"

#: the entry-point group of plugin tasks, whose packages hold their own schemas/ and cards/
TASK_GROUP = "labeler.tasks"
SCHEMA_SUFFIX = ".schema.json"
CARD_SUFFIX = ".md.j2"


def plugin_folders(kind: str) -> list[Path]:
    """The `kind` folders ("schemas" or "cards") of the installed packages that add a task
    (entry points `labeler.tasks`): each package holds its kinds' files as labeler does."""
    return [root / kind for root in _plugin_roots(tuple(sys.path))]


@cache
def _plugin_roots(path: tuple[str, ...]) -> list[Path]:
    """The folders of the packages declaring `labeler.tasks` entry points on this `sys.path`,
    found without importing them."""
    roots = []
    for point in entry_points(group=TASK_GROUP):
        try:  # a malformed value is said when its task is loaded (labeler.plugins)
            spec = importlib.util.find_spec(point.value.split(":")[0].split(".")[0].strip())
        except (ImportError, ValueError):
            spec = None
        roots += [Path(root) for root in (spec.submodule_search_locations or [])] if spec else []
    return list(dict.fromkeys(roots))


def schema_names() -> list[str]:
    """Names of the record schemas of labeler and its plugins, e.g. ["manifest", "utility"]."""
    return sorted({p.name.removesuffix(SCHEMA_SUFFIX) for folder in _folders("schemas")
                   for p in folder.glob(f"*{SCHEMA_SUFFIX}")})


def schema_path(name: str) -> Path:
    """`schemas/<name>.schema.json` (labeler's, else a plugin's); UnknownNameError listing the
    schemas if there is none."""
    path = _find("schemas", f"{name}{SCHEMA_SUFFIX}")
    if path is None:
        raise UnknownNameError("schema", name, schema_names())
    return path


@cache
def load_schema(name: str) -> dict:
    """The parsed JSON Schema `name` (read once per process)."""
    return json.loads(schema_path(name).read_text(encoding="utf-8"))


def card_path(artifact: str) -> Path:
    """`cards/<artifact>.md.j2` (labeler's, else a plugin's); UnknownNameError listing the card
    templates if there is none."""
    path = _find("cards", f"{artifact}{CARD_SUFFIX}")
    if path is None:
        names = sorted({p.name.removesuffix(CARD_SUFFIX) for folder in _folders("cards")
                        for p in folder.glob(f"*{CARD_SUFFIX}")})
        raise UnknownNameError("card template", artifact, names)
    return path


def _folders(kind: str) -> list[Path]:
    return [SCHEMAS if kind == "schemas" else CARDS, *plugin_folders(kind)]


def _find(kind: str, name: str) -> Path | None:
    """The first file `name` in labeler's `kind` folder, then in its plugins'."""
    return next((folder / name for folder in _folders(kind) if (folder / name).is_file()), None)
