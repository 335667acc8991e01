"""`push`: publish local artifact versions to a Hub dataset repo, atomically and resumably.

A push is planned from what the repo holds now, then carried out one step at a time:

- a version whose files are on the Hub but whose tag is missing (an earlier push stopped
  between its commit and its tag) is tagged on the commit that added it;
- the other versions go in one commit holding their files and the merged root card, and each
  gets its tag on that commit. Should one push carry two versions of the same config, the older
  goes in an earlier commit, so that every tag pins a card whose config names its own version.

A commit is atomic on the Hub, so a version is there whole or not at all. After any transient
failure the state is read again and the plan redone: a commit whose answer was lost is found
and tagged, never sent twice. A version already tagged on the Hub is never pushed again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import CommitOperationAdd
from huggingface_hub.utils import HfHubHTTPError

from labeler import __version__
from labeler.artifacts.manifest import layout_root
from labeler.errors import ArtifactError, HubError, InputError
from labeler.hub.card import card_diff, merge_card
from labeler.hub.layout import Version, find_versions, version_key
from labeler.hub.remote import (
    ATTEMPTS,
    Remote,
    RemoteState,
    backoff,
    describe,
    hub_errors,
    transient,
)
from labeler.paths import atomic_file
from labeler.progress import info

#: the local record of published versions, in the artifacts root folder
RECORD = ".published.json"


@dataclass
class Published:
    """One version of a push and what became of it."""

    version: Version
    #: "pushed", "tagged" (committed before, tag added now), "already on the Hub" or "planned"
    status: str
    commit: str | None = None


@dataclass
class Operation:
    """One thing a push sends (or, with dry_run, would send)."""

    step: str  # "create repo", "commit 1", "commit 2", ...
    action: str  # "create", "add", "update", "tag"
    target: str  # a repo, a path in the repo, or a tag
    detail: str = ""


@dataclass
class PushResult:
    repo: str
    url: str
    dry_run: bool
    versions: list[Published] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    card_diff: str = ""  # the root card, before -> after


@dataclass
class _Step:
    versions: list[Version]
    card: str | None  # the root card to commit with them; None: they are committed, tag only
    commit: str | None = None  # for a tag-only step: the commit to tag


def push(
    paths: list[Path] | None,
    *,
    repo: str,
    out: Path | None = None,
    private: bool = False,
    dry_run: bool = False,
) -> PushResult:
    """Publish artifact versions to the dataset repo `repo` ("namespace/name").

    `paths` are version folders, or folders holding them; none means every version under `out`
    (default ./out) that `<out>/.published.json` does not list as published to this repo.
    A version named explicitly that is already on the Hub raises HubError. The repo is created
    (private if asked) when missing. `dry_run` reads the repo but writes nothing, there or here:
    the result holds the operations and the root card's diff.
    """
    remote = Remote(repo)
    out = Path(out) if out is not None else Path("out")
    versions = _explicit(paths) if paths else _unpublished(out, remote.url)
    result = PushResult(repo, remote.url, dry_run)
    for version in versions:
        version.verify()
    if not versions:
        return result
    with hub_errors(remote, again="run the same command again: a push resumes where it stopped"):
        if not dry_run:
            remote.require_token()
            remote.create(private=private)
        state = remote.state()
        todo, already = _triage(versions, state, explicit=bool(paths), remote=remote)
        for version in already:
            result.versions.append(
                Published(version, "already on the Hub", state.tags[version.tag])
            )
            if not dry_run:
                _record(version, remote.url, state.tags[version.tag])
        if dry_run:
            _describe(_plan(remote, state, todo), state, result)
        else:
            _publish(remote, todo, state, result)
    return result


def _publish(
    remote: Remote, pending: list[Version], state: RemoteState, result: PushResult
) -> None:
    """Carry out the plan step by step, re-planning from a fresh state after a failure."""
    card_before, card_after = state.card, None
    failures = commits = 0
    while pending:
        try:
            if state is None:
                state = remote.state()
            for version in [v for v in pending if v.tag in state.tags]:  # tagged, answer lost
                _done(result, remote, pending, version, "pushed", state.tags[version.tag])
            if not pending:
                break
            step = _plan(remote, state, pending)[0]
            if step.card is None:
                version = step.versions[0]
                remote.tag(version.tag, step.commit)
                result.operations.append(Operation("tag", "tag", version.tag, step.commit[:8]))
                _done(result, remote, pending, version, "tagged", step.commit)
            else:
                commits += 1
                names = ", ".join(v.tag for v in step.versions)
                oid = remote.commit(_operations(step), message=f"Add {names}", parent=state.head)
                info(f"committed {names} as {oid[:8]}")
                result.operations += _describe_commit(step, f"commit {commits}", state.card)
                card_after = step.card
                for version in step.versions:
                    remote.tag(version.tag, oid)
                    _done(result, remote, pending, version, "pushed", oid)
            failures = 0
        except Exception as exc:
            failures += 1
            if not (transient(exc) or _moved_on(exc)) or failures >= ATTEMPTS:
                raise
            delay = backoff(failures)
            info(f"push interrupted ({describe(exc)}); reading the repo again in {delay:.2g}s")
            time.sleep(delay)
        state = None
    if card_after is not None:
        result.card_diff = card_diff(card_before, card_after)


def _plan(remote: Remote, state: RemoteState, pending: list[Version]) -> list[_Step]:
    """Steps that bring the repo from `state` to holding every pending version, tagged."""
    committed = [v for v in pending if _on_hub(v, state)]
    steps = [_Step([v], None, remote.last_commit(v.prefix, state.head)) for v in committed]
    rest = [v for v in pending if v not in committed]
    card = state.card
    while rest:
        oldest: dict[str, Version] = {}
        for v in sorted(rest, key=Version.sort_key, reverse=True):
            oldest[v.config] = v
        batch = sorted(oldest.values(), key=lambda v: v.prefix)
        card = merge_card(card, batch, remote.repo)
        steps.append(_Step(batch, card))
        rest = [v for v in rest if v not in batch]
    return steps


def _triage(
    versions: list[Version], state: RemoteState, *, explicit: bool, remote: Remote
) -> tuple[list[Version], list[Version]]:
    """(versions to publish, versions already published); refuses what must never be pushed."""
    todo, already = [], []
    for version in versions:
        if version.tag in state.tags:
            if explicit:
                raise HubError(
                    f"{version.prefix} is already on the Hub (tag '{version.tag}'); "
                    "a published version is never pushed again",
                    repo=remote.repo,
                    hint=f"build a new version, or get this one with `labeler pull {remote.repo} "
                    f"--revision {version.tag}`",
                )
            already.append(version)
            continue
        newer = [v for v in _remote_versions(state, version) if version_key(v) > version.sort_key()]
        if newer and not _on_hub(version, state):
            raise HubError(
                f"{version.prefix} is older than v{max(newer, key=version_key)} already on the "
                "Hub; versions of a config are published in order",
                repo=remote.repo,
                hint="build a new version instead",
            )
        todo.append(version)
    return todo, already


def _on_hub(version: Version, state: RemoteState) -> bool:
    """True if the version's files are all on the Hub (committed, maybe untagged)."""
    present = [p for p in state.files if p.startswith(version.prefix + "/")]
    if not present:
        return False
    uploads = dict(version.uploads())
    if set(present) != set(uploads) or not all(state.holds(p, f) for p, f in uploads.items()):
        raise HubError(
            f"{version.prefix} is on the Hub with other contents than {version.folder}",
            repo=None,
            hint="a published version is never rewritten: build a new version",
        )
    return True


def _remote_versions(state: RemoteState, version: Version) -> set[str]:
    parent = f"{version.artifact}/{version.dataset}/{version.llm}/v"
    return {
        p[len(parent) :].split("/")[0]
        for p in state.files
        if p.startswith(parent) and "/" in p[len(parent) :]
    }


def _operations(step: _Step) -> list[CommitOperationAdd]:
    adds = [
        CommitOperationAdd(path, str(local)) for v in step.versions for path, local in v.uploads()
    ]
    return adds + [CommitOperationAdd("README.md", step.card.encode("utf-8"))]


def _describe(steps: list[_Step], state: RemoteState, result: PushResult) -> None:
    """Fill a dry run's result: the operations of every step and the card's diff."""
    if state.head is None:
        result.operations.append(
            Operation("create repo", "create", result.repo, "dataset repo, created when missing")
        )
    card, commits = state.card, 0
    for step in steps:
        for version in step.versions:
            result.versions.append(Published(version, "planned"))
        if step.card is None:
            result.operations.append(
                Operation(
                    "tag",
                    "tag",
                    step.versions[0].tag,
                    f"{step.commit[:8]} (committed before, tag missing)",
                )
            )
            continue
        commits += 1
        result.operations += _describe_commit(step, f"commit {commits}", card)
        card = step.card
    result.card_diff = card_diff(state.card, card) if card != state.card else ""


def _describe_commit(step: _Step, name: str, card_before: str | None) -> list[Operation]:
    ops = [
        Operation(name, "add", path, _size(local))
        for v in step.versions
        for path, local in v.uploads()
    ]
    ops.append(
        Operation(
            name,
            "update" if card_before else "add",
            "README.md",
            "configs: " + ", ".join(f"{v.config} -> v{v.version}" for v in step.versions),
        )
    )
    return ops + [Operation(name, "tag", v.tag, "on this commit") for v in step.versions]


def _done(
    result: PushResult,
    remote: Remote,
    pending: list[Version],
    version: Version,
    status: str,
    commit: str,
) -> None:
    result.versions.append(Published(version, status, commit))
    pending.remove(version)
    _record(version, remote.url, commit)
    info(f"{status} {version.prefix} as tag {version.tag}")


def _moved_on(exc: Exception) -> bool:
    """The commit's parent is no longer main's head: someone pushed meanwhile; re-plan."""
    return isinstance(exc, HfHubHTTPError) and exc.response.status_code == 412


def _explicit(paths: list[Path]) -> list[Version]:
    found: dict[str, Version] = {}
    for path in paths:
        folders = find_versions(Path(path))
        if not folders:
            raise ArtifactError(
                "no artifact version here (a folder with manifest.json)", path=str(path)
            )
        for folder in folders:
            version = Version.read(folder)
            other = found.get(version.prefix)
            if other is not None and other.folder.resolve() != folder.resolve():
                raise ArtifactError(
                    f"two folders claim {version.prefix}: {other.folder} and {folder}",
                    path=str(path),
                )
            found[version.prefix] = version
    return sorted(found.values(), key=lambda v: (v.config, v.sort_key()))


def _unpublished(out: Path, url: str) -> list[Version]:
    published = _read_record(out / RECORD).get(url, {})
    versions = [Version.read(folder) for folder in find_versions(out)] if out.is_dir() else []
    return sorted(
        (v for v in versions if v.prefix not in published), key=lambda v: (v.config, v.sort_key())
    )


def _read_record(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON: {exc.msg}",
            path=str(path),
            line_no=exc.lineno,
            hint="fix or delete it: the Hub's tags say what is published",
        ) from exc


def _record(version: Version, url: str, commit: str) -> None:
    """Add a version to its root's record of published versions, atomically (temp file, rename)."""
    root = layout_root(version.folder, version.artifact, version.dataset, version.llm,
                       version.version)
    if root is None:
        return
    path = root / RECORD
    record = _read_record(path)
    record.setdefault(url, {})[version.prefix] = {
        "tag": version.tag,
        "commit": commit,
        "tool_version": __version__,
    }
    with atomic_file(path) as f:
        f.write(json.dumps(record, indent=2, sort_keys=True) + "\n")


def _size(path: Path) -> str:
    return f"{path.stat().st_size:,} bytes"
