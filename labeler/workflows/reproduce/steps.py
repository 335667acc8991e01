"""What every `labeler reproduce` command shares: what a run hands back, and how its report
version folder is written."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Reproduced:
    """A written report: its version folder, its records, and the steps run or skipped (done
    before)."""

    path: Path
    records: list[dict]
    ran: list
    skipped: list


def write_version(parent: Path, files: dict[str, str | bytes]) -> Path:
    """The next version folder `parent/v<N>` holding `files` (name -> text or bytes), written
    in a staging folder and renamed into place whole: a reader never sees part of one."""
    parent.mkdir(parents=True, exist_ok=True)
    taken = [int(p.name[1:]) for p in parent.glob("v*") if p.name[1:].isdigit()]
    path = parent / f"v{max(taken, default=0) + 1}"
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=".staging-"))
    try:
        for name, content in files.items():
            target = staging / name
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        staging.rename(path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A markdown table's lines: the header, its rule, a line per row of cells."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(map(str, cells)) + " |" for cells in rows)]


def tests_lines(rows: Iterable[dict]) -> list[str]:
    """A markdown table of the paired t-tests among `rows` (those naming a "test")."""
    return markdown_table(
        ("dataset", "metric", "test", "n", "mean a", "mean b", "t", "p", "wins / ties / losses"),
        ((r["dataset"], r["metric"], r["test"], r["n"], *(_short(r[k]) for k in (
            "mean_a", "mean_b", "t", "p")), f"{r['wins']} / {r['ties']} / {r['losses']}")
         for r in rows if "test" in r))


def _short(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"
