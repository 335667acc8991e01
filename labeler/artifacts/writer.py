"""Writing one artifact version folder, all or nothing, never over an existing version."""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from functools import partial
from pathlib import Path

import jsonlines

from labeler.artifacts.card import render_card
from labeler.artifacts.manifest import CARD, DATA, MANIFEST, build_manifest
from labeler.artifacts.schema import schema_problems
from labeler.errors import ArtifactError, InputError
from labeler.paths import file_sha256
from labeler.progress import track
from labeler.resources import card_path, load_schema, schema_path

_DUMPS = partial(json.dumps, ensure_ascii=False, allow_nan=False)


def write_artifact(
    records: Iterable[dict],
    *,
    out: str | Path,
    artifact: str,
    dataset: str,
    llm: str,
    version: str | None = None,
    manifest: dict,
    stats: dict,
) -> Path:
    """Write `<out>/<artifact>/<dataset>/<llm>/v<version>/` and return it.

    The folder holds data.jsonl (every record checked against schemas/<artifact>.schema.json;
    the first invalid one raises InputError naming record number and field), manifest.json and
    README.md. It is written in a hidden temporary folder beside the target, synced, then renamed,
    so it appears complete or not at all; on any failure (Ctrl-C included) nothing is left.
    `version` None takes the next free integer; an existing version raises ArtifactError.
    `records` may be a generator: it is streamed, not held in memory.
    """
    target = artifact_dir(out, artifact=artifact, dataset=dataset, llm=llm, version=version)
    version = target.name[1:]
    names = {"artifact": artifact, "dataset": dataset, "llm": llm, "version": version}
    # Fail on a bad caller manifest before the records (perhaps a long computation) are consumed.
    build_manifest(manifest, **names, records=0, files={DATA: "0" * 64}, stats=stats)
    created = _make_dirs(target.parent)
    tmp = target.parent / f".{target.name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        tmp.mkdir()
        count = _write_records(records, tmp / DATA, artifact)
        final = build_manifest(manifest, **names, records=count,
                               files={DATA: file_sha256(tmp / DATA)}, stats=stats)
        _write_text(tmp / MANIFEST, json.dumps(final, indent=2, ensure_ascii=False) + "\n")
        _write_text(tmp / CARD, render_card(final, stats, data_file=DATA))
        _fsync(tmp)
        if target.exists():
            raise _exists(target)
        os.rename(tmp, target)
        _fsync(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in reversed(created):
            _rmdir_if_empty(folder)
        raise
    return target


def artifact_dir(
    out: str | Path, *, artifact: str, dataset: str, llm: str, version: str | None = None
) -> Path:
    """The version folder a write would create; raises before any work if it cannot.

    UnknownNameError for an artifact kind without schema and card, InputError for a name that
    cannot be one folder, ArtifactError if the version exists. `version` None -> next integer;
    a leading "v" before a digit is dropped ("v2" and "2" both mean v2/).
    """
    card_path(artifact)
    schema_path(artifact)
    for field, value in (("dataset", dataset), ("llm", llm)):
        _check_segment(field, value)
    parent = Path(out) / artifact / dataset / llm
    if version is None:
        version = str(_next_version(parent))
    version = re.sub(r"^v(?=\d)", "", str(version))
    _check_segment("version", version)
    target = parent / f"v{version}"
    if target.exists():
        raise _exists(target)
    return target


def _write_records(records: Iterable[dict], path: Path, artifact: str) -> int:
    if hasattr(records, "__len__"):
        records = track(records, f"writing {artifact} records", len(records))
    count = 0
    with path.open("w", encoding="utf-8") as f:
        writer = jsonlines.Writer(f, dumps=_DUMPS)
        for count, record in enumerate(records, 1):
            found = schema_problems(record, artifact)
            if found:
                field, message = found[0]
                raise InputError(message, line_no=count, field_name=field or None)
            try:
                writer.write(record)
            except ValueError as exc:  # NaN or infinity: not JSON
                raise InputError(f"not valid JSON: {exc}", line_no=count) from exc
        f.flush()
        os.fsync(f.fileno())
    return count


def _write_text(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _fsync(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dirs(folder: Path) -> list[Path]:
    """mkdir -p; returns the folders it created, outermost first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()][::-1]
    for p in missing:
        p.mkdir(exist_ok=True)
    return missing


def _rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def _next_version(parent: Path) -> int:
    taken = [int(p.name[1:]) for p in parent.glob("v*") if re.fullmatch(r"v\d+", p.name)]
    return max(taken, default=0) + 1


def _check_segment(field: str, value: str) -> None:
    pattern = load_schema("manifest")["$defs"]["segment"]["pattern"]
    if not isinstance(value, str) or not re.fullmatch(pattern, value):
        raise InputError(f"{value!r} cannot be a folder name: use letters, digits, '.', '_', '+', '-'",
                         field_name=field)


def _exists(target: Path) -> ArtifactError:
    return ArtifactError(
        "this version exists already", path=str(target),
        hint=f"versions are never overwritten: pass another --version, or none to write "
             f"v{_next_version(target.parent)}",
    )
