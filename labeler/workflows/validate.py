"""`labeler validate`: the problems of an artifact folder or JSONL file, one line each. A file
is checked until it has `SHOWN` problems, its further lines only counted, and `SHOWN` problems
are kept over all files, the rest counted: a file of a million bad lines takes the time and
memory of a hundred."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from labeler.artifacts.card import render_card
from labeler.artifacts.manifest import CARD, DATA, MANIFEST, data_files, table_of, table_schema
from labeler.artifacts.reader import sha256_problem
from labeler.artifacts.staging import abandoned_partials
from labeler.errors import ArtifactError
from labeler.lines import jsonl_lines, read_jsonl
from labeler.progress import progress_bar
from labeler.resources import load_schema, schema_names, schema_path
from labeler.schemas import schema_problems
from labeler.tasks import KINDS, load_kind
from labeler.workflows.rederive import derived_problems

#: the problems kept (and shown) of one `check_path`; the rest are counted
SHOWN = 100


@dataclass
class FileCheck:
    """What was found in one file: `name` as shown in its problems, the schema used, lines read."""

    name: str
    schema: str | None = None
    lines: int | None = None
    problems: list[str] = field(default_factory=list)
    more: int = 0  # problems found beyond those kept in `problems`, counted only
    unchecked: int = 0  # lines after the SHOWN-th problem of this file, not checked

    @property
    def count(self) -> int:
        """Every problem found, kept or only counted."""
        return len(self.problems) + self.more

    def add(self, problem: str) -> None:
        """`problem` kept while the file has fewer than SHOWN, else counted."""
        if len(self.problems) < SHOWN:
            self.problems.append(problem)
        else:
            self.more += 1

    @property
    def full(self) -> bool:
        """Whether SHOWN problems are kept: the file's further lines are not checked."""
        return len(self.problems) >= SHOWN


def validate_path(path: str | Path, *, schema: str | None = None) -> list[str]:
    """Line-numbered problems of an artifact folder or JSONL file (see `check_path`); [] if valid.

    e.g. ``data.jsonl:7: invalid JSON: Expecting ',' delimiter (column 15)`` or
    ``data.jsonl:3: field 'candidates[0].pid': 'pid' is a required property``.
    """
    return [problem for check in check_path(path, schema=schema) for problem in check.problems]


def check_path(path: str | Path, *, schema: str | None = None) -> list[FileCheck]:
    """One FileCheck per file looked at.

    `path` is a version folder, a folder holding version folders (each is checked), or a JSONL
    file. The records' schema is `schema` if given, else the manifest's artifact, else the first
    schema name found in the file's own name or folder path (e.g. .../utility/.../data.jsonl).
    A version folder is checked for manifest.json (against its schema), every data file (each
    line against the record schema, sha256 against the manifest, record count), README.md,
    and its derived tables and files against the kind's own derivation (`derived_problems`).
    """
    path = Path(path)
    if schema is not None:
        schema_path(schema)  # UnknownNameError listing the schemas
    if path.is_file():
        manifest = _manifest_near(path)
        return _kept([_check_jsonl(path, str(path),
                                   schema or _artifact(manifest) or _infer(path), manifest)])
    if not path.is_dir():
        raise ArtifactError("no such file or folder", path=str(path))
    folders = sorted(
        m.parent for m in path.rglob(MANIFEST)
        if not any(part.startswith(".") for part in m.relative_to(path).parts)
    )
    stale = [FileCheck(shown, problems=[f"{shown}: {why}"])
             for folder, why in abandoned_partials(path)
             if (shown := folder.relative_to(path).as_posix())]
    if (path / MANIFEST).is_file() or not (folders or stale):
        folders = [path]
    return _kept([check for folder in folders for check in _check_folder(folder, path, schema)]
                 + stale)


def _kept(checks: list[FileCheck]) -> list[FileCheck]:
    """`checks` with SHOWN problems kept over all of them, in order; the rest counted."""
    room = SHOWN
    for check in checks:
        kept = check.problems[:room]
        check.more += len(check.problems) - len(kept)
        check.problems, room = kept, room - len(kept)
    return checks


def _check_folder(folder: Path, root: Path, schema: str | None) -> list[FileCheck]:
    def shown(file: Path) -> str:
        return file.relative_to(root).as_posix()

    manifest_check = FileCheck(shown(folder / MANIFEST), "manifest")
    manifest = _read_manifest(folder / MANIFEST, manifest_check)
    listed = manifest["files"] if manifest else {}
    name = schema or _artifact(manifest) or _infer(folder)
    checks = [manifest_check]
    present = {p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
               and p.name not in (MANIFEST, CARD)}
    lines: dict[str, int] = {}  # table -> records over its files
    for file in (folder / n for n in sorted({*listed, *present})):
        table = table_of(file.name)
        if not file.is_file():
            checks.append(FileCheck(shown(file), None, None,
                                    [f"{shown(file)}: listed in {MANIFEST} but missing"]))
        elif table is None:  # a file the kind adds (a TREC run, an image): its sha256 only
            problem = sha256_problem(file, manifest) if manifest else None
            checks.append(FileCheck(shown(file), None, None,
                                    [f"{shown(file)}: {problem}"] if problem else []))
        else:
            check = _check_jsonl(file, shown(file), _table_schema(name, table), manifest)
            if check.lines == 0 and table == DATA:  # a shard's other tables may hold none
                check.add(f"{shown(file)}: holds no records")
            lines[table] = lines.get(table, 0) + (check.lines or 0)
            checks.append(check)
    if DATA not in lines:
        manifest_check.problems.append(f"{shown(folder / MANIFEST)}: no data files (data-*.jsonl)")
    if manifest:
        tables = set(load_kind(manifest["artifact"]).tables) if _artifact(manifest) else set()
        for table in sorted({DATA, *tables, *lines} - {None}):
            key = "records" if table == DATA else table
            recorded = manifest["counts"].get(key)
            if recorded != lines.get(table, 0):
                manifest_check.problems.append(
                    f"{manifest_check.name}: counts.{key} is {recorded} but the {table} files "
                    f"hold {lines.get(table, 0)} lines")
    card = FileCheck(shown(folder / CARD))
    if not (folder / CARD).is_file():
        card.problems.append(f"{card.name}: missing (the dataset card)")
    elif _artifact(manifest) and DATA in lines and not any(c.count for c in checks):
        _check_statistics(folder, manifest, manifest_check, card)
        derived = derived_problems(folder, manifest)
        for check in checks:
            check.problems += derived.pop(Path(check.name).name, [])
    return [*checks, card]


def _table_schema(name: str | None, table: str) -> str | None:
    """The schema of `table`'s records when the data's schema is `name`."""
    if name is None:
        return None
    schema = table_schema(name, table)
    return schema if schema in schema_names() else None


def _check_statistics(folder: Path, manifest: dict, manifest_check: FileCheck,
                      card: FileCheck) -> None:
    """Recompute the statistics from the data files with the artifact's kind; every one the
    manifest or the card's statistics section states otherwise is a problem. A version
    written under an earlier schema is held to the statistics it recorded (a later schema may
    add some)."""
    kind = load_kind(manifest["artifact"])
    stats = kind.statistics(r for f in data_files(folder) for _, r in read_jsonl(f))
    recorded = manifest.get("stats") or {}
    older = manifest["schema_version"] < load_schema(manifest["artifact"]).get("version", 1)
    for key in sorted(set(recorded) if older else set(stats) | set(recorded)):
        if not _same(stats.get(key), recorded.get(key)):
            manifest_check.problems.append(
                f"{manifest_check.name}: stats.{key} is {recorded.get(key)!r} but the records "
                f"give {stats.get(key)!r}")
    recomputed = {**manifest, "stats": stats}
    expected = _statistics_section(render_card(recomputed, kind.metadata,
                                               kind.card_context(recomputed)))
    written = set(_statistics_section((folder / CARD).read_text(encoding="utf-8")))
    for row in expected:
        if row not in written:
            card.problems.append(f"{card.name}: the statistics differ from the records: "
                                 f"expected the row '{row}'")


def _statistics_section(card: str) -> list[str]:
    """The table rows of a card's "## Statistics" section."""
    rows, inside = [], False
    for line in card.splitlines():
        if line.startswith("## "):
            inside = line.startswith("## Statistics")
        elif inside and line.startswith("|") and not line.startswith("|---"):
            rows.append(line.strip())
    return rows


def _same(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _read_manifest(path: Path, check: FileCheck) -> dict | None:
    """The manifest if it is present and valid; otherwise its problems go to `check`."""
    if not path.is_file():
        check.problems.append(f"{check.name}: missing, so this is not an artifact version folder")
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = f":{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        check.problems.append(f"{check.name}{line}: invalid JSON: {exc}")
        return None
    found = schema_problems(manifest, "manifest")
    check.problems += [_problem(check.name, None, f, m) for f, m in found]
    return None if found else manifest


def _check_jsonl(file: Path, shown: str, schema: str | None, manifest: dict | None) -> FileCheck:
    check = FileCheck(shown, schema, 0 if schema else None)
    if manifest and (problem := sha256_problem(file, manifest)):
        check.problems.append(f"{shown}: {problem}")
    if schema is None:
        check.problems.append(f"{shown}: cannot tell which schema its records follow; pass "
                              f"--schema NAME (one of: {', '.join(schema_names())})")
        return check
    with file.open("rb") as f:
        total = sum(1 for _ in f)
    with progress_bar(f"validating {shown}", total) as advance:
        for line_no, record, problem in jsonl_lines(file):
            if check.full:  # the rest counted as lines, so the record counts still compare
                check.unchecked, check.lines = total - line_no + 1, total
                break
            check.lines = line_no
            if problem:
                check.add(_problem(shown, line_no, "", problem))
            else:
                for f, m in schema_problems(record, schema):
                    check.add(_problem(shown, line_no, f, m))
            advance(1)
    return check


def _problem(shown: str, line_no: int | None, field_path: str, message: str) -> str:
    where = f"{shown}:{line_no}" if line_no is not None else shown
    return f"{where}: field '{field_path}': {message}" if field_path else f"{where}: {message}"


def _manifest_near(file: Path) -> dict | None:
    """The valid manifest of the version folder holding `file`, if there is one."""
    check = FileCheck(MANIFEST)
    path = file.parent / MANIFEST
    return _read_manifest(path, check) if path.is_file() else None


def _artifact(manifest: dict | None) -> str | None:
    return manifest["artifact"] if manifest and manifest["artifact"] in KINDS else None


def _infer(path: Path) -> str | None:
    """The first schema name among the file's stem and its folders' names, nearest first."""
    path = path.absolute()
    names = [path.stem if path.is_file() else path.name, *(p.name for p in path.parents)]
    known = set(KINDS)
    return next((name for name in names if name in known), None)
