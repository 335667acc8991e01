"""People's verdicts on a labels version, kept as they are made and written as `review`
versions beside the labels: `<out>/review/<dataset>/<llm>/v<N>/`.

Each verdict is appended to a journal beside the review versions (`.journal-v<labels
version>-<reviewer>.jsonl`) and synced to disk before the page hears it was kept, so neither a
closed tab nor a killed server loses one. Every append and every seal holds the review folder's
lock (`.lock`, flock: released by the system when its holder dies), so two sessions of one
reviewer share the journal safely, and two reviewers' seals never take the same version
number. `seal` reads the journal and the latest review version of the same labels from disk
under that lock (never what this process holds), writes them as the next review version and
only then drops the journal: whatever any session appended is in the version. A server that
was killed leaves its journal for the next one to seal. Versions of several reviewers merge by
reviewer id (`merge_reviews`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from labeler.artifacts.manifest import MANIFEST, read_manifest
from labeler.artifacts.reader import open_artifact
from labeler.errors import InputError
from labeler.paths import locked
from labeler.review_format import current
from labeler.schemas import check
from labeler.view.review import ReviewKind

#: what makes two verdicts the same question: the latest answer to it is kept
Key = tuple[str, str, str, str, str | None]
#: a note's cap, in UTF-8 bytes
NOTE_BYTES = 4096


class Verdicts:
    """The verdicts of `reviewer` (and those earlier versions hold) on one labels version."""

    def __init__(self, labels: Path, labels_manifest: dict, *, out: Path, reviewer: str):
        if not re.fullmatch(r"[A-Za-z0-9._+-]+", reviewer):
            raise InputError(f"{reviewer!r} cannot be a reviewer id: use letters, digits, "
                             "'.', '_', '+', '-'", field_name="reviewer")
        self.labels, self.out, self.reviewer = labels, Path(out), reviewer
        self.about = labels_of(labels, labels_manifest)
        self.folder = self.out / ReviewKind.name / self.about["dataset"] / self.about["llm"]
        self.journal = (self.folder /
                        f".journal-v{self.about['version']}-{reviewer}.jsonl")
        self.lock = self.folder / ".lock"
        self.kept: dict[Key, dict] = {}
        if self.folder.is_dir():
            with locked(self.lock):
                self.kept.update(self._on_disk())

    def add(self, *, qid: str, pid: str | None, verdict: str, note: str = "",
            about: str | None = None) -> dict:
        """Check one verdict, sync it into the journal and return its record; `about`
        defaults to "query" without a pid, else "candidate"."""
        if len(note.encode("utf-8")) > NOTE_BYTES:
            raise InputError(f"a note holds at most {NOTE_BYTES} bytes (UTF-8), this one "
                             f"{len(note.encode('utf-8'))}", field_name="note")
        record = {"reviewer": self.reviewer, "llm": self.about["llm"], "qid": qid,
                  "about": about or ("query" if pid is None else "candidate"), "pid": pid,
                  "verdict": verdict, "note": note,
                  "at": datetime.now(UTC).isoformat(timespec="milliseconds")
                  .replace("+00:00", "Z")}
        check(record, "review", path=self.journal.name)
        self.folder.mkdir(parents=True, exist_ok=True)
        with locked(self.lock):
            _append(self.journal, json.dumps(record, ensure_ascii=False) + "\n")
        self.kept[_key(record)] = record
        return record

    def of(self, qid: str) -> list[dict]:
        """This reviewer's kept verdicts on query `qid`."""
        return [r for r in self.kept.values() if r["qid"] == qid and
                r["reviewer"] == self.reviewer]

    def judged(self) -> set[str]:
        """The qids this reviewer has given any verdict."""
        return {r["qid"] for r in self.kept.values() if r["reviewer"] == self.reviewer}

    def seal(self) -> Path | None:
        """Under the folder's lock, write the latest review version with the journal's
        verdicts on top as the next review version, then drop the journal; the version
        folder, or None when the journal held nothing."""
        if not self.folder.is_dir():
            return None
        with locked(self.lock):
            journal = _journalled(self.journal)
            if not journal:
                self.journal.unlink(missing_ok=True)
                return None
            kept = self._on_disk(journal)
            folder = write_review(kept.values(), out=self.out, about=self.about,
                                  manifest=read_manifest(self.labels))
            self.journal.unlink()
        self.kept = kept
        return folder

    def _on_disk(self, journal: list[dict] | None = None) -> dict[Key, dict]:
        """The latest review version's verdicts, the journal's on top (call under the lock)."""
        base = latest_review(self.folder, self.about)
        kept = _keyed(open_artifact(base)[1]) if base is not None else {}
        kept.update(_keyed(_journalled(self.journal) if journal is None else journal))
        return kept


def labels_of(folder: Path, manifest: dict) -> dict:
    """What a review version names of its labels: artifact, dataset, llm, version and the
    sha256 of their manifest.json."""
    digest = hashlib.sha256((Path(folder) / MANIFEST).read_bytes()).hexdigest()
    return {key: manifest[key] for key in ("artifact", "dataset", "llm", "version")} | {
        "manifest_sha256": digest}


def latest_review(folder: Path, about: dict) -> Path | None:
    """The highest review version in `folder` of the labels `about` names, or None."""
    versions = sorted((int(p.name[1:]), p) for p in folder.glob("v*") if p.name[1:].isdigit())
    for _, path in reversed(versions):
        if read_manifest(path).get("labels") == about:
            return path
    return None


def write_review(records: Iterable[dict], *, out: Path, about: dict, manifest: dict) -> Path:
    """Write `records` (one per key, sorted) as the next review version of the labels
    `about` names; `manifest` (the labels', or an earlier review's) gives the model and
    source."""
    # jinja2 and the Hub's card code: imported on writing, not at the server's start-up
    from labeler.artifacts.writer import write_artifact

    ordered = sorted(records, key=lambda r: (r["reviewer"], r["qid"], r["about"], r["pid"] or "",
                                             r["llm"]))
    return write_artifact(ordered, out=out, kind=ReviewKind, dataset=about["dataset"],
                          llm=about["llm"], manifest={
                              "model_id": manifest["model_id"],
                              "model_revision": manifest["model_revision"],
                              "source_dataset": manifest["source_dataset"],
                              "source_revision": manifest["source_revision"],
                              "license": manifest.get("license"),
                              "language": manifest.get("language"),
                              "prompt_templates": {}, "sampling": {}, "seed": None,
                              "labels": about})


def merge_reviews(folders: list[Path], *, out: Path) -> Path:
    """Merge review versions of the same labels by reviewer id (a key's latest verdict wins)
    into the next review version; InputError if they review different labels."""
    first = read_manifest(folders[0])
    kept: dict[Key, dict] = {}
    for folder in folders:
        manifest, records = open_artifact(folder)
        if manifest["artifact"] != ReviewKind.name or manifest["labels"] != first["labels"]:
            raise InputError("not a review of the same labels as the first folder",
                             path=str(folder), hint="merge reviews of one labels version")
        for key, record in _keyed(records).items():
            if key not in kept or record["at"] > kept[key]["at"]:
                kept[key] = record
    return write_review(kept.values(), out=out, about=first["labels"], manifest=first)


def _key(record: dict) -> Key:
    return record["reviewer"], record["llm"], record["qid"], record["about"], record["pid"]


def _keyed(records: Iterable[dict]) -> dict[Key, dict]:
    """`records` (of any review schema, read as the current one) by key."""
    return {_key(r): r for r in map(current, records)}


def _append(journal: Path, line: str) -> None:
    """Append `line` to the journal and sync it, first cutting off a line a killed server left
    unfinished (never answered "saved"), so that it cannot run into this one."""
    with journal.open("ab") as f:
        size = f.tell()
        if size:
            with journal.open("rb") as r:
                r.seek(size - 1)
                if r.read(1) != b"\n":
                    r.seek(0)
                    f.truncate(r.read().rfind(b"\n") + 1)
        f.write(line.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def _journalled(journal: Path) -> list[dict]:
    """The journal's verdicts; a last line cut short by a killed server is left out."""
    if not journal.is_file():
        return []
    records = []
    lines = journal.read_bytes().splitlines()
    for number, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except ValueError:  # not JSON, or UTF-8 cut inside a character
            if number < len(lines):
                raise InputError("not a JSON line", path=str(journal), line_no=number) from None
    return records
