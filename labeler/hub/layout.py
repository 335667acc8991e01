"""Local artifact versions and the names they get on the Hub: folder, config and tag.

A version folder `<out>/<artifact>/<dataset>/<llm>/v<version>/` is published under the same
path in the dataset repo. Its config and tag are

    config  = "<artifact>.<dataset>.<llm>"          e.g. utility.nq.llama3.1-8b
    tag     = "<config>.v<version>"                 e.g. utility.nq.llama3.1-8b.v1

An artifact with a second table (SEER's pairs) has one more config per table, named
"<artifact>-<table>.<dataset>.<llm>" (seer-pairs.nq.llama3.1-8b), each pointing at its own
files of the same folder, so `load_dataset(repo, config)` loads one table; the version's one
tag pins them all (`revision="seer.nq.llama3.1-8b.v1"` for seer-pairs.nq.llama3.1-8b).

Dots separate the parts because the names themselves may hold "-" (msmarco-fqa, llama3.1-8b).
The Hub takes dots in config names (wikimedia/wikipedia has "20231101.en"); `datasets` refuses
only ``<>:/\\|?*``, and the folder-name rule (letters, digits, '.', '_', '+', '-') excludes those.
A tag must also be a valid git ref name (git check-ref-format), which `check_tag` enforces.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from labeler.artifacts import verify_artifact
from labeler.artifacts.manifest import DATA, MANIFEST, read_manifest, table_of
from labeler.errors import ArtifactError, HubError

#: what git (and so the Hub) refuses in a ref name
_BAD_REF = re.compile(r"^[-.]|\.\.|[\x00-\x20\x7f~^:?*\[\\]|@\{|\.lock$|[./]$|//")


@dataclass(frozen=True)
class Version:
    """One local artifact version folder and its Hub names."""

    folder: Path
    artifact: str
    dataset: str
    llm: str
    version: str
    data_files: tuple[str, ...]  # file names, as listed in manifest.json "files"

    @classmethod
    def read(cls, folder: str | Path) -> Version:
        """The version in `folder`, as its manifest.json describes it."""
        folder = Path(folder)
        manifest = read_manifest(folder)
        version = cls(
            folder,
            manifest["artifact"],
            manifest["dataset"],
            manifest["llm"],
            str(manifest["version"]),
            tuple(sorted(manifest["files"])),
        )
        check_tag(version.tag)
        return version

    def verify(self) -> None:
        """ArtifactError unless every file of the folder is a regular file (a symlink could
        publish a file from anywhere) and every data file and the card still have the sha256
        the manifest records."""
        for path in sorted(self.folder.iterdir()):
            if path.is_symlink() and not path.name.startswith("."):
                raise ArtifactError(f"a symlink (to {os.readlink(path)}), not a file of the "
                                    "version", path=str(path), hint="a version folder pushes "
                                    "only its own regular files: replace the link with the file")
        verify_artifact(self.folder)

    @property
    def config(self) -> str:
        return f"{self.artifact}.{self.dataset}.{self.llm}"

    @property
    def configs(self) -> dict[str, list[str]]:
        """Config name -> the file names of its table: `config` for the data, one more per
        further table."""
        found: dict[str, list[str]] = {}
        for name in self.data_files:
            table = table_of(name)
            if table is not None:
                config = self.config if table == DATA else \
                    f"{self.artifact}-{table}.{self.dataset}.{self.llm}"
                found.setdefault(config, []).append(name)
        return found

    @property
    def tag(self) -> str:
        return f"{self.config}.v{self.version}"

    @property
    def prefix(self) -> str:
        """The version's folder inside the repo, e.g. utility/nq/llama3.1-8b/v1."""
        return f"{self.artifact}/{self.dataset}/{self.llm}/v{self.version}"

    def uploads(self) -> list[tuple[str, Path]]:
        """(path in repo, local file) for every regular file of the folder, hidden ones and
        symlinks excepted (`verify` refuses a symlink)."""
        return [
            (f"{self.prefix}/{p.name}", p)
            for p in sorted(self.folder.iterdir())
            if p.is_file() and not p.is_symlink() and not p.name.startswith(".")
        ]

    def sort_key(self) -> tuple:
        return version_key(self.version)


def find_versions(root: Path) -> list[Path]:
    """Every version folder (one holding manifest.json) under `root`, hidden folders skipped."""
    if (root / MANIFEST).is_file():
        return [root]
    found = [
        m.parent
        for m in root.rglob(MANIFEST)
        if not any(part.startswith(".") for part in m.relative_to(root).parts)
    ]
    return sorted(found)


def version_key(version: str) -> tuple:
    """Natural order: "2" < "10", "1.2" < "1.10"."""
    return tuple(
        (0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.findall(r"\d+|\D+", version)
    )


def check_tag(tag: str) -> None:
    """HubError if `tag` is not a name git and the Hub accept as a tag."""
    if _BAD_REF.search(tag):
        raise HubError(
            f"'{tag}' cannot be a Hub tag (a git ref name: no '..', no leading '-' or '.', "
            "no trailing '.' or '.lock')",
            hint="rename the dataset, llm or version",
        )


def git_blob_oid(path: Path) -> str:
    """The git blob sha1 of a file: what the Hub reports as a regular file's oid."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
