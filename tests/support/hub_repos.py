"""The tests' Hub server's repos: git-like histories in memory (every commit a sha, a parent and
a full snapshot of its files), the tree entries they list, the commits their NDJSON payloads
make, and the metadata checks the Hub applies (support.hub_server serves them over HTTP)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field

import yaml

GITATTRIBUTES = (
    b"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.arrow filter=lfs diff=lfs merge=lfs -text\n"
)
YAML_BLOCK = re.compile(r"^\s*---[\r\n]+(.*?)[\r\n]+---[\r\n]", re.DOTALL)
# git check-ref-format, as the Hub applies it to tag names
BAD_REF = re.compile(r"(^[-.])|(\.\.)|([\x00-\x20~^:?*\[\\])|(@\{)|(\.lock$)|([./]$)|(//)")


def blob_oid(content: bytes) -> str:
    """The git blob sha1, which the Hub reports as a regular file's oid and ETag."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Commit:
    sha: str
    parent: str | None
    title: str
    date: str
    files: dict[str, bytes]  # full snapshot: path -> content


@dataclass
class Repo:
    repo_id: str
    repo_type: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    gated: bool = False
    accepted: set[str] = field(default_factory=set)  # tokens of users granted a gated repo

    def resolve(self, revision: str) -> Commit | None:
        sha = self.branches.get(revision) or self.tags.get(revision)
        if sha is None and revision in self.commits:
            sha = revision
        return self.commits.get(sha) if sha else None

    def last_commit(self, commit: Commit, path: str) -> Commit:
        """The newest commit, up to `commit`, that changed `path` (a file or a folder)."""

        def view(c: Commit | None) -> dict[str, bytes]:
            if c is None:
                return {}
            return {p: b for p, b in c.files.items() if p == path or p.startswith(path + "/")}

        while commit.parent is not None:
            parent = self.commits[commit.parent]
            if view(commit) != view(parent):
                return commit
            commit = parent
        return commit

    def entry(self, commit: Commit, path: str, expand: bool) -> dict | None:
        """The tree entry of `path` (a file or a folder) at `commit`, as the Hub lists it."""
        if path in commit.files:
            content = commit.files[path]
            entry = {"type": "file", "oid": blob_oid(content), "size": len(content), "path": path}
        else:
            inside = sorted(
                (p, blob_oid(b)) for p, b in commit.files.items() if p.startswith(path + "/")
            )
            if not inside:
                return None
            oid = hashlib.sha1(json.dumps(inside).encode()).hexdigest()
            entry = {"type": "directory", "oid": oid, "size": 0, "path": path}
        if expand:
            last = self.last_commit(commit, path)
            entry["lastCommit"] = {"id": last.sha, "title": last.title, "date": last.date}
        return entry

    def info(self, commit: Commit, *, blobs: bool) -> dict:
        """The repo at `commit` as `repo_info` reads it (with each file's size and blob id
        when `blobs`)."""
        siblings = [
            {"rfilename": p, **({"size": len(b), "blobId": blob_oid(b)} if blobs else {})}
            for p, b in sorted(commit.files.items())
        ]
        match = YAML_BLOCK.match(commit.files.get("README.md", b"").decode())
        card = yaml.safe_load(match.group(1)) if match else None
        first = self.commits[min(self.commits, key=lambda s: self.commits[s].date)]
        return {
            "_id": hashlib.sha1(self.repo_id.encode()).hexdigest()[:24],
            "id": self.repo_id,
            "author": self.repo_id.split("/")[0],
            "sha": commit.sha,
            "lastModified": commit.date,
            "createdAt": first.date,
            "private": self.private,
            "gated": "auto" if self.gated else False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "cardData": card if isinstance(card, dict) else None,
            "siblings": siblings,
        }

    def refs(self) -> dict:
        """Branches, parquet conversions and tags, as `list_repo_refs` reads them."""

        def refs(kind: str, names: dict[str, str]) -> list[dict]:
            return [
                {"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": sha}
                for n, sha in sorted(names.items())
            ]

        heads = {n: s for n, s in self.branches.items() if not n.startswith("refs/convert/")}
        converts = [{"name": n.removeprefix("refs/convert/"), "ref": n, "targetCommit": s}
                    for n, s in sorted(self.branches.items()) if n not in heads]
        return {"branches": refs("heads", heads), "converts": converts,
                "tags": refs("tags", self.tags), "pullRequests": []}


class HttpError(Exception):
    """An error answer: status, message (body and X-Error-Message), X-Error-Code, extras."""

    def __init__(
        self, status: int, message: str, code: str | None = None, *, extra=None, extra_headers=None
    ):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code
        self.extra = extra or {}  # more keys for the JSON body
        self.extra_headers = extra_headers or {}


def committed(head: Commit, body: bytes) -> tuple[str, dict[str, bytes]]:
    """(title, files) of a commit made on `head` by a create_commit NDJSON `body`; HttpError
    where the Hub refuses it (a stale parent, a missing file, metadata it cannot validate)."""
    files = dict(head.files)
    title = ""
    for line in body.splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        key, value = item["key"], item["value"]
        if key == "header":
            title = value["summary"]
            parent = value.get("parentCommit")
            if parent is not None and parent != head.sha:
                raise HttpError(
                    412, "A commit has happened since. Please refresh and try again."
                )
        elif key == "file":
            files[value["path"]] = base64.b64decode(value["content"])
        elif key == "deletedFile":
            if files.pop(value["path"], None) is None:
                raise HttpError(404, "A file with this name doesn't exist", "EntryNotFound")
        elif key == "deletedFolder":
            files = {
                p: b
                for p, b in files.items()
                if not p.startswith(value["path"].rstrip("/") + "/")
            }
        else:
            raise HttpError(
                400,
                f"unsupported commit operation {key!r}: this server stores regular files only",
            )
    if "README.md" in files and files["README.md"] != head.files.get("README.md"):
        errors = yaml_errors(files["README.md"].decode())
        if errors:
            raise HttpError(400, "Invalid metadata in README.md: " + errors[0]["message"])
    return title, files


def yaml_errors(content: str) -> list[dict]:
    """What the Hub's validate-yaml would object to in a README's metadata block."""
    match = YAML_BLOCK.match(content)
    if not match:
        return []
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        return [{"message": f"YAML parse error: {exc}"}]
    if data is None:
        return []
    if not isinstance(data, dict):
        return [{"message": "metadata must be a mapping"}]
    configs = data.get("configs", [])
    if not isinstance(configs, list):
        return [{"message": '"configs" must be a list'}]
    names = [c.get("config_name") if isinstance(c, dict) else None for c in configs]
    if not all(isinstance(n, str) and n for n in names):
        return [{"message": '"configs[].config_name" is required and must be a string'}]
    if len(set(names)) != len(names):
        return [{"message": '"configs[].config_name" must be unique'}]
    if any(set(n) & set("<>:/\\|?*") for n in names):
        return [
            {"message": '"configs[].config_name" contains a character not allowed in a config name'}
        ]
    return []
