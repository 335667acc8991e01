"""The derived tables of a version, made again and compared with what is written.

A kind's tables and extra files follow from what was labelled and the manifest (SEER's pairs,
ranks and weighted scores from the experts' scores and the settled weights; the rubric's
fused scores and ranks, and `fused.trec`, from P(yes) and BM25). `labeler validate` makes
them again shard by shard with the kind's own `rederive` and `attachments`, never a second
copy of their formulas, and names each file, line and field that differs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from labeler.artifacts.manifest import DATA, data_file, data_files
from labeler.lines import read_jsonl
from labeler.tasks import load_kind

_ABSENT = object()


def derived_problems(folder: Path, manifest: dict) -> dict[str, list[str]]:
    """File name -> its problems: each line of a derived table whose record is not what
    the kind derives (the first differing field named), a table with more or fewer lines
    than derived, an extra file whose lines differ from the one made from the derived
    tables (so an edited table is named once, in its own file)."""
    kind = load_kind(manifest["artifact"])
    tables = (DATA, *kind.tables)

    def shards() -> Iterator[tuple[int, dict[str, list[dict]], dict[str, list[dict]] | None]]:
        """(shard, its written tables, the same derived again), one shard in memory."""
        for file in data_files(folder):
            index = int(file.stem.rsplit("-", 1)[1])
            written = {table: [r for _, r in read_jsonl(path)] if (
                path := folder / data_file(index, table)).is_file() else [] for table in tables}
            yield index, written, kind.rederive(manifest, written)

    problems: dict[str, list[str]] = {}
    for index, written, derived in shards():
        if derived is None:
            return {}
        for table, records in derived.items():
            name = data_file(index, table)
            found = _first_difference(written.get(table, []), records)
            if found:
                problems.setdefault(name, []).append(f"{name}{found}")

    def read(table: str) -> Iterator[dict]:
        for _, _, derived in shards():
            yield from derived[table]

    for name, content in kind.attachments(read).items():
        text = content.decode() if isinstance(content, bytes) else content
        path = folder / name
        have = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        want = text.splitlines()
        line = next((i for i, (a, b) in enumerate(zip(have, want), 1) if a != b), None)
        if line is not None:
            problems.setdefault(name, []).append(
                f"{name}:{line}: is '{have[line - 1]}' but the labels give '{want[line - 1]}'")
        elif len(have) != len(want):
            problems.setdefault(name, []).append(
                f"{name}: holds {len(have)} lines but the labels give {len(want)}")
    return problems


def _first_difference(written: list[dict], derived: list[dict]) -> str | None:
    """`:LINE: field 'PATH' is X but ... give Y` at the first differing line, else `: holds
    N records but ... give M` where the counts differ; None where all agree."""
    for line, (have, want) in enumerate(zip(written, derived), 1):
        found = _difference(have, want, "")
        if found:
            where, a, b = found
            return (f":{line}: field '{where}' is {_shown(a)} but its labels and manifest give "
                    f"{_shown(b)}")
    if len(written) != len(derived):
        return f": holds {len(written)} records but its labels and manifest give {len(derived)}"
    return None


def _difference(a: object, b: object, path: str) -> tuple[str, object, object] | None:
    """(field path, written, derived) of the first difference, numbers equal to 1e-9."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            found = _difference(a.get(key, _ABSENT), b.get(key, _ABSENT),
                                f"{path}.{key}" if path else str(key))
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return path, f"{len(a)} items", f"{len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            found = _difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        return None if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else (path, a, b)
    return None if a == b else (path, a, b)


def _shown(value: object) -> str:
    if value is _ABSENT:
        return "absent"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
