"""manifest.json: how an artifact version was made, and the sha256 of each of its data files."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import labeler
from labeler.errors import ArtifactError, InputError
from labeler.resources import load_schema
from labeler.schemas import check

MANIFEST = "manifest.json"
CARD = "README.md"

#: keys the writer sets itself; a caller passes them as write_artifact arguments instead.
WRITER_KEYS = ("tool_version", "artifact", "dataset", "llm", "version", "schema_version",
               "files", "created_at", "stats", "card_sha256")


#: the table every artifact has: its records, one per query
DATA = "data"
#: what git (and so the Hub) refuses in a ref name, as a version's tag is one
_BAD_REF = re.compile(r"^[-.]|\.\.|[\x00-\x20\x7f~^:?*\[\\]|@\{|\.lock$|[./]$|//")


def version_tag(artifact: str, dataset: str, llm: str, version: str) -> str:
    """The Hub tag of a version: `<artifact>.<dataset>.<llm>.v<version>`."""
    return f"{artifact}.{dataset}.{llm}.v{version}"


def tag_problem(tag: str) -> str | None:
    """Why `tag` cannot be a Hub tag (a git ref name, git check-ref-format), or None."""
    if _BAD_REF.search(tag):
        return (f"'{tag}' cannot be a Hub tag (a git ref name: no '..', no leading '-' or '.', "
                "no trailing '.' or '.lock')")
    return None


def layout_root(folder: Path, artifact: str, dataset: str, llm: str, version: str) -> Path | None:
    """The artifacts root `<out>` of a version folder that sits where the writer puts it,
    `<out>/<artifact>/<dataset>/<llm>/v<version>`, else None."""
    folder = Path(folder).resolve()
    if folder.parts[-4:] == (artifact, dataset, llm, f"v{version}"):
        return folder.parents[3]
    return None


def data_file(shard: int, table: str = DATA) -> str:
    """The file of `table` for shard `shard`, e.g. data-00000.jsonl or pairs-00000.jsonl:
    file-name order is shard order."""
    return f"{table}-{shard:05d}.jsonl"


def data_files(folder: Path, table: str = DATA) -> list[Path]:
    """The files of `table` in a version folder, in shard order."""
    return sorted(folder.glob(f"{table}-[0-9]*.jsonl"))


def table_of(name: str) -> str | None:
    """The table a file name belongs to ("data" for data-00000.jsonl), or None for a file that
    is no shard of a table."""
    m = re.fullmatch(r"(?P<table>[a-z][a-z0-9_]*)-\d{5,}\.jsonl", name)
    return m["table"] if m else None


def table_schema(artifact: str, table: str) -> str:
    """The schema a table's records follow: `<artifact>` for the data, `<artifact>-<table>`
    for each other table (schemas/seer-pairs.schema.json)."""
    return artifact if table == DATA else f"{artifact}-{table}"


def build_manifest(
    given: dict,
    *,
    artifact: str,
    dataset: str,
    llm: str,
    version: str,
    records: int,
    files: dict[str, str],
    stats: dict | None = None,
) -> dict:
    """The caller's manifest keys plus the writer's, validated by schemas/manifest.schema.json.

    `given["prompt_templates"]` maps a name to the template text; it is stored as
    ``{name: {"sha256": ..., "text": ...}}``. `given["counts"]` may add counts; `records` is
    always the writer's own. `stats` is stored under "stats", the record schema's version
    under "schema_version". Raises InputError naming the field.
    """
    for key in WRITER_KEYS:
        if key in given:
            raise InputError(f"'{key}' is set by the writer, not by the caller",
                             path=MANIFEST, field_name=key)
    counts = given.get("counts", {})
    if not isinstance(counts, dict):
        raise InputError("expected an object of counts", path=MANIFEST, field_name="counts")
    manifest = {
        "tool_version": labeler.__version__,
        "artifact": artifact,
        "dataset": dataset,
        "llm": llm,
        "version": version,
        "schema_version": load_schema(artifact).get("version", 1),
        **given,
        "counts": {**counts, "records": records},
        "files": files,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds")
        .replace("+00:00", "Z"),
    }
    if isinstance(given.get("prompt_templates"), dict):
        manifest["prompt_templates"] = hashed_templates(given["prompt_templates"])
    if stats is not None:
        manifest["stats"] = stats
    check_manifest(manifest, MANIFEST)
    try:
        json.dumps(manifest, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"not JSON-serialisable: {exc}", path=MANIFEST) from exc
    return manifest


def check_manifest(manifest: object, where: str) -> None:
    """Raise InputError at the first schema problem of `manifest` (read from `where`)."""
    check(manifest, "manifest", path=where)


def read_manifest(folder: Path) -> dict:
    """The manifest of a version folder, schema-checked; ArtifactError if there is none."""
    path = folder / MANIFEST
    if not path.is_file():
        raise ArtifactError(f"no {MANIFEST} here", path=str(folder),
                            hint="point at a version folder <out>/<artifact>/<dataset>/<llm>/v<N>/")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=str(path), line_no=exc.lineno) from exc
    check_manifest(manifest, str(path))
    return manifest


def hashed_templates(templates: dict) -> dict:
    """Prompt templates as a manifest records them: {name: {"sha256", "text"}}; an entry
    already so recorded (not a string) is kept."""
    return {
        name: {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "text": text}
        if isinstance(text, str) else text
        for name, text in templates.items()
    }
