"""Content checksums of an on-disk store's files (an index, a stored corpus): recorded in its
commit record when it is written, verified before it is used.

A record lists each file's size and sha256 (`describe`). `verify` re-hashes a file only when
its (size, mtime, ctime, inode) differ from the last time it was verified, kept in a `seen`
file beside the record, so a warm open stats its files and reads none of their bytes: any
write to a file changes its ctime (which no user call sets back), and it is hashed again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from labeler.paths import atomic_file
from labeler.progress import progress_bar

__all__ = ["HashingWriter", "commit", "damage", "describe", "remember", "said", "verify"]


class HashingWriter:
    """A binary file's `write`, hashing what goes through it (for `np.save` and FAISS's
    writer callbacks): the sha256 of a file comes with writing it, not from reading it back."""

    def __init__(self, file) -> None:
        self.file, self.digest = file, hashlib.sha256()

    def write(self, data) -> int:
        self.digest.update(data)
        return self.file.write(data)

    def hexdigest(self) -> str:
        return self.digest.hexdigest()


def describe(paths: Iterable[Path], known: Mapping[str, str] | None = None) -> dict[str, dict]:
    """{file name: {"bytes": size, "sha256": hex}} of `paths`; a name in `known` (name ->
    sha256, e.g. from `HashingWriter`) is not read again."""
    known = known or {}
    return {path.name: {"bytes": path.stat().st_size,
                        "sha256": known.get(path.name) or _sha256(path)} for path in paths}


def verify(folder: Path, recorded: Mapping[str, dict], seen: Path) -> dict[str, str]:
    """File name -> what is wrong with it, for each file `recorded` (`describe`'s record) in
    `folder` that is missing, of another size, or whose bytes have another sha256; {} when
    all hold. Files verified before and unchanged since (by `seen`) are not read."""
    before = _read(seen)
    problems: dict[str, str] = {}
    now: dict[str, list] = {}
    for name, want in recorded.items():
        try:
            stamp = _stamp(folder / name)
        except FileNotFoundError:
            problems[name] = "missing"
            continue
        if stamp[0] != want.get("bytes"):
            problems[name] = f"{stamp[0]} bytes, recorded {want.get('bytes')}"
        elif before.get(name) == [*stamp, want.get("sha256")]:
            now[name] = before[name]
        elif _sha256(folder / name) != want.get("sha256"):
            problems[name] = "its bytes differ from its recorded sha256"
        else:
            now[name] = [*stamp, want["sha256"]]
    if now != before:
        with atomic_file(seen) as f:
            json.dump(now, f)
    return problems


def remember(folder: Path, recorded: Mapping[str, dict], seen: Path) -> None:
    """Mark the files `recorded` in `folder` as verified as they are now: the ones a commit
    just hashed while writing, so the first open does not read them again."""
    with atomic_file(seen) as f:
        json.dump({name: [*_stamp(folder / name), want["sha256"]]
                   for name, want in recorded.items()}, f)


def commit(record: Path, seen: Path, paths: Iterable[Path], fields: Mapping) -> None:
    """Write an index's commit record `record` last and atomically: `fields`, each file's size
    (`bytes`) and its size and sha256 (`files`); then mark the files verified as they are."""
    files = describe(paths)
    with atomic_file(record) as f:
        json.dump({**fields, "bytes": {name: r["bytes"] for name, r in files.items()},
                   "files": files}, f, indent=1)
    remember(record.parent, files, seen)


def damage(folder: Path, record: Mapping, seen: Path) -> str | None:
    """What is wrong with the bytes of the files a commit `record` lists in `folder` (a
    record without checksums cannot be verified), or None when they all hold."""
    files = record.get("files")
    if not isinstance(files, dict):
        return "unverifiable (its record has no checksums)"
    problems = verify(folder, files, seen)
    return f"damaged ({said(problems)})" if problems else None


def said(problems: Mapping[str, str]) -> str:
    """`verify`'s problems in one line: "name: why; ..."."""
    return "; ".join(f"{name}: {why}" for name, why in sorted(problems.items()))


def _stamp(path: Path) -> list[int]:
    status = path.stat()
    return [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]


def _read(seen: Path) -> dict:
    try:
        value = json.loads(seen.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes, under a progress bar of bytes (an index file may be
    gigabytes)."""
    digest = hashlib.sha256()
    with path.open("rb") as f, progress_bar(f"verifying {path.name}",
                                            path.stat().st_size) as advance:
        while block := f.read(1 << 22):
            digest.update(block)
            advance(len(block))
    return digest.hexdigest()
