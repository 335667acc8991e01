"""`pull`: download one published artifact version and check it against its manifest."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

from huggingface_hub import DatasetCard
from huggingface_hub.utils import EntryNotFoundError, RevisionNotFoundError

from labeler.artifacts import verify_artifact
from labeler.artifacts.manifest import MANIFEST, read_manifest
from labeler.errors import ArtifactError, HubError, UnknownNameError
from labeler.hub.card import version_folder
from labeler.hub.remote import Remote, hub_errors


def pull(
    repo: str,
    *,
    config: str | None = None,
    revision: str | None = None,
    out: str | Path | None = None,
) -> Path:
    """The local folder of one version of `repo`, every data file checked against manifest.json.

    `config` picks the artifact × dataset × LLM (needed when the repo has several and `revision`
    is not one of their version tags). `revision` is a version tag, a branch or a commit (default
    main, where each config names its newest version). With `out` None the files stay in the
    Hugging Face cache; otherwise the version lands in `<out>/<artifact>/<dataset>/<llm>/v<N>/`,
    complete or not at all. A sha256 mismatch raises ArtifactError and nothing is kept.
    """
    remote = Remote(repo)
    with hub_errors(remote):
        commit = _resolve(remote, revision or "main")
        folder = _folder(remote, commit, config, revision)
        if out is None:
            path = remote.download(folder, commit, None) / folder
            _check(path, folder)
            return path
        return _into(remote, folder, commit, Path(out))


def _resolve(remote: Remote, revision: str) -> str:
    try:
        return remote.resolve(revision)
    except RevisionNotFoundError as exc:
        tags = remote.tags()
        raise HubError(
            f"no revision '{revision}'",
            repo=remote.repo,
            hint=f"tags: {', '.join(tags)}" if tags else "the repo has no tags",
        ) from exc


def _folder(remote: Remote, commit: str, config: str | None, revision: str | None) -> str:
    """The version folder that `config` names in the root card at `commit`."""
    try:
        card = DatasetCard(remote.read_text("README.md", commit))
    except EntryNotFoundError as exc:
        raise HubError(
            "the repo has no README.md, so no configs to pull", repo=remote.repo
        ) from exc
    configs = {c.get("config_name"): version_folder(c) for c in card.data.get("configs") or []}
    ours = {name: folder for name, folder in configs.items() if folder is not None}
    if config is None:
        tagged = revision.rsplit(".v", 1)[0] if revision and ".v" in revision else None
        if tagged in ours:
            config = tagged
        elif len(set(ours.values())) == 1:  # one version (its tables' configs share it)
            config = next(iter(ours))
        else:
            raise HubError(
                f"the repo has {len(ours)} labeler configs; say which one",
                repo=remote.repo,
                hint="--config " + " | ".join(sorted(ours)),
            )
    if config not in ours:
        raise UnknownNameError("config", config, sorted(ours))
    return ours[config]


def _into(remote: Remote, folder: str, commit: str, out: Path) -> Path:
    """Download into a hidden folder under `out`, check, then rename into place."""
    final = out / folder
    if final.exists():
        theirs = json.loads(remote.read_text(f"{folder}/{MANIFEST}", commit))["files"]
        if read_manifest(final)["files"] != theirs:
            raise ArtifactError(
                "exists already with other data files than the Hub's",
                path=str(final),
                hint="pull into another --out",
            )
        _check(final, folder)
        return final
    tmp = out / f".pull-{uuid.uuid4().hex[:12]}"
    try:
        remote.download(folder, commit, tmp)
        _check(tmp / folder, folder)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tmp / folder, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _check(path: Path, folder: str) -> None:
    """ArtifactError unless `path` holds the version `folder` names, sha256 for sha256."""
    manifest = verify_artifact(path)
    named = f"{manifest['artifact']}/{manifest['dataset']}/{manifest['llm']}/v{manifest['version']}"
    if named != folder:
        raise ArtifactError(f"{MANIFEST} describes {named}, not {folder}", path=str(path))
