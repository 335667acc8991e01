"""Reading artifacts back: sha256 verification against the manifest, then the JSONL records."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from labeler.artifacts.manifest import CARD, DATA, MANIFEST, read_manifest, table_of
from labeler.errors import ArtifactError, InputError
from labeler.lines import read_jsonl
from labeler.paths import file_sha256

if TYPE_CHECKING:
    import datasets


@dataclass
class Artifact:
    """A loaded artifact: where it is, its manifest (None for a bare JSONL file), its records."""

    path: Path
    manifest: dict | None
    records: list[dict]

    def to_dataset(self) -> datasets.Dataset:
        """The records as a `datasets.Dataset`: a version folder's as `load_dataset` gives
        them from the folder or the Hub (typed as its card's `dataset_info` says); a JSONL
        file's with the types `datasets` infers."""
        from datasets import Dataset, load_dataset

        if self.path.is_dir():
            return load_dataset(str(self.path), split="train")
        return Dataset.from_list(self.records)


def load_artifact(path: str | Path) -> Artifact:
    """Load a version folder's data records (sha256-verified first) or a `.jsonl` file.

    A JSONL file inside a version folder is checked against that folder's manifest too. Raises
    ArtifactError for a missing or tampered artifact, InputError (file and line) for a bad line.
    """
    manifest, records = open_artifact(path)
    return Artifact(Path(path), manifest, list(records))


def open_artifact(path: str | Path) -> tuple[dict | None, Iterator[dict]]:
    """`load_artifact`'s manifest (None for a bare JSONL file) and its records one at a time,
    for a reader that keeps only what it needs of each; the manifest's record count is checked
    once the last is read. The files are verified before this returns."""
    path = Path(path)
    if path.is_dir():
        manifest = verify_artifact(path)
        files = [path / name for name in sorted(manifest["files"])  # file-name order
                 if table_of(name) == DATA]
    elif path.is_file() and path.suffix == ".jsonl":
        manifest = read_manifest(path.parent) if (path.parent / MANIFEST).is_file() else None
        if manifest is not None:
            _check_file(path, manifest)
        files = [path]
    elif path.exists():
        raise InputError("expected an artifact version folder or a .jsonl file", path=str(path))
    else:
        raise ArtifactError("no such file or folder", path=str(path))
    return manifest, _records(path, manifest, files)


def read_tables(path: str | Path) -> tuple[dict, dict[str, list[dict]]]:
    """A version folder's manifest and every table's rows by table name ("data" and the
    kind's own), its files verified first."""
    path = Path(path)
    manifest = verify_artifact(path)
    tables: dict[str, list[dict]] = {}
    for name in sorted(manifest["files"]):
        if (table := table_of(name)) is not None:
            tables.setdefault(table, []).extend(r for _, r in read_jsonl(path / name))
    return manifest, tables


def _records(path: Path, manifest: dict | None, files: list[Path]) -> Iterator[dict]:
    count = 0
    for file in files:
        for _, record in read_jsonl(file):
            count += 1
            yield record
    if path.is_dir() and count != manifest["counts"]["records"]:
        raise ArtifactError(f"{MANIFEST} counts {manifest['counts']['records']} records but the "
                            f"data files hold {count}", path=str(path),
                            hint="rebuild the artifact or pull it again; never edit a version")


def verify_artifact(path: str | Path) -> dict:
    """Check every data file of a version folder, and its card where the manifest records the
    card's, against the sha256 in its manifest.

    Returns the manifest. Raises ArtifactError naming the first file that is missing, changed,
    or present but not listed.
    """
    folder = Path(path)
    folder = folder if folder.is_dir() else folder.parent
    manifest = read_manifest(folder)
    for name in manifest["files"]:
        _check_file(folder / name, manifest)
    if manifest.get("card_sha256"):  # versions written before it was recorded have none
        _check_file(folder / CARD, {"files": {CARD: manifest["card_sha256"]}})
    for file in sorted(folder.iterdir()):
        if (file.is_file() and not file.name.startswith(".") and file.name not in (MANIFEST, CARD)
                and file.name not in manifest["files"]):
            raise ArtifactError(f"file not listed in {MANIFEST}", path=str(file),
                                hint="a version folder holds only the files its manifest lists")
    return manifest


def sha256_problem(file: Path, manifest: dict) -> str | None:
    """Why `file` does not match its sha256 in `manifest`, or None when it does."""
    expected = manifest["files"].get(file.name)
    if expected is None:
        return f"not listed in {MANIFEST}"
    if not file.is_file():
        return f"listed in {MANIFEST} but missing"
    actual = file_sha256(file)
    if actual != expected:
        return (f"sha256 mismatch: {MANIFEST} says {expected[:12]}…, the file has "
                f"{actual[:12]}… (changed after it was written)")
    return None


def _check_file(file: Path, manifest: dict) -> None:
    problem = sha256_problem(file, manifest)
    if problem:
        raise ArtifactError(problem, path=str(file),
                            hint="rebuild the artifact or pull it again; never edit a version")
