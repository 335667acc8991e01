"""One dataset repo on the Hub: the reads and writes push and pull need, with retries and errors.

Every call that can be repeated safely goes through `retry`: up to ATTEMPTS tries on HTTP 5xx,
429, timeouts and dropped connections, waiting $LABELER_HUB_BACKOFF seconds (default 1) and
doubling. Any other failure, or the last one, becomes a `HubError` in `hub_errors`
(`labeler.network`'s one mapping).
The token is whatever huggingface_hub finds (HF_TOKEN or the saved login); it is only ever put
into request headers by huggingface_hub itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
from huggingface_hub import (
    CommitOperationAdd,
    HfApi,
    constants,
    get_token,
    hf_hub_url,
    snapshot_download,
)
from huggingface_hub.hf_api import RepoSibling
from huggingface_hub.utils import (
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    build_hf_headers,
    get_session,
    hf_raise_for_status,
)

from labeler import network, settings
from labeler.errors import HubError
from labeler.hub.layout import git_blob_oid
from labeler.network import AGAIN, describe, redact
from labeler.paths import file_sha256
from labeler.progress import info

T = TypeVar("T")
ATTEMPTS = 5
#: failures on the way: timeouts, dropped connections, a server or proxy hanging up
_NETWORK = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)


@dataclass
class RemoteState:
    """What the repo's main branch holds now. `head` is None when the repo does not exist."""

    head: str | None
    files: dict[str, RepoSibling]
    tags: dict[str, str]  # tag -> commit
    card: str | None  # the root README.md

    def holds(self, path: str, local: Path) -> bool:
        """True if `path` is on the Hub with exactly the bytes of `local`."""
        remote = self.files.get(path)
        if remote is None:
            return False
        if remote.lfs is not None:
            return remote.lfs.sha256 == file_sha256(local)
        return remote.blob_id == git_blob_oid(local)


class Remote:
    """The dataset repo `repo` ("namespace/name") on the Hub at $HF_ENDPOINT."""

    def __init__(self, repo: str):
        if repo.count("/") != 1 or not all(repo.split("/")):
            raise HubError(f"'{repo}' is not a repo id", hint="write it as NAMESPACE/NAME")
        self.repo = repo
        self.endpoint = constants.ENDPOINT  # $HF_ENDPOINT, as huggingface_hub read it at import
        self.url = f"{self.endpoint}/datasets/{repo}"
        self.api = HfApi(endpoint=self.endpoint)

    def require_token(self) -> None:
        if get_token() is None:
            raise HubError(
                "no Hugging Face token to write with",
                repo=self.repo,
                hint="set HF_TOKEN or run `hf auth login`",
            )

    def state(self) -> RemoteState:
        try:
            repo = retry(
                lambda: self.api.dataset_info(self.repo, revision="main", files_metadata=True),
                "read the repo",
            )
        except RepositoryNotFoundError:
            return RemoteState(None, {}, {}, None)
        refs = retry(
            lambda: self.api.list_repo_refs(self.repo, repo_type="dataset"), "read the tags"
        )
        files = {s.rfilename: s for s in repo.siblings or []}
        card = self.read_text("README.md", repo.sha) if "README.md" in files else None
        return RemoteState(repo.sha, files, {t.name: t.target_commit for t in refs.tags}, card)

    def read_text(self, path: str, revision: str) -> str:
        """A small text file, read into memory (not into the download cache)."""
        url = hf_hub_url(
            self.repo, path, repo_type="dataset", revision=revision, endpoint=self.endpoint
        )

        def get() -> str:
            response = get_session().get(url, headers=build_hf_headers(), timeout=60)
            hf_raise_for_status(response)
            return response.content.decode("utf-8")

        return retry(get, f"read {path}")

    def create(self, *, private: bool) -> None:
        retry(
            lambda: self.api.create_repo(
                self.repo, repo_type="dataset", private=private, exist_ok=True
            ),
            "create the repo",
        )

    def commit(
        self, operations: list[CommitOperationAdd], *, message: str, parent: str | None
    ) -> str:
        """One atomic commit on main; not retried here (the caller re-reads the state first)."""
        try:
            result = self.api.create_commit(
                self.repo,
                operations,
                commit_message=message,
                repo_type="dataset",
                parent_commit=parent,
            )
        except ValueError as exc:  # the Hub's validate-yaml refused the merged card
            if not str(exc).startswith("Invalid metadata"):
                raise
            raise HubError(
                f"the Hub refuses the merged README.md: {redact(str(exc))}",
                repo=self.repo,
                hint="fix the YAML block of the repo's README.md",
            ) from exc
        return result.oid

    def tag(self, tag: str, commit: str) -> None:
        try:
            retry(
                lambda: self.api.create_tag(
                    self.repo, tag=tag, revision=commit, repo_type="dataset"
                ),
                f"tag {tag}",
            )
        except HfHubHTTPError as exc:
            if exc.response.status_code != 409:
                raise
            refs = retry(
                lambda: self.api.list_repo_refs(self.repo, repo_type="dataset"), "read the tags"
            )
            if {t.name: t.target_commit for t in refs.tags}.get(tag) != commit:
                raise HubError(
                    f"tag '{tag}' exists already on another commit", repo=self.repo
                ) from exc

    def last_commit(self, path: str, revision: str) -> str:
        """The commit that last changed `path`: the one that added a published version folder."""
        found = retry(
            lambda: self.api.get_paths_info(
                self.repo, [path], expand=True, revision=revision, repo_type="dataset"
            ),
            f"read {path}",
        )
        return found[0].last_commit.oid

    def resolve(self, revision: str) -> str:
        """The commit sha `revision` (branch, tag or sha) points at."""
        return retry(
            lambda: self.api.dataset_info(self.repo, revision=revision), "read the repo"
        ).sha

    def tags(self) -> list[str]:
        refs = retry(
            lambda: self.api.list_repo_refs(self.repo, repo_type="dataset"), "read the tags"
        )
        return sorted(t.name for t in refs.tags)

    def download(self, folder: str, commit: str, local_dir: Path | None) -> Path:
        """The files of `folder` at `commit`, in `local_dir` or the HF cache; returns the root."""
        return Path(
            retry(
                lambda: snapshot_download(
                    self.repo,
                    repo_type="dataset",
                    revision=commit,
                    allow_patterns=[f"{folder}/*"],
                    local_dir=local_dir,
                    endpoint=self.endpoint,
                ),
                f"download {folder}",
            )
        )


def retry(call: Callable[[], T], what: str) -> T:
    """`call()`, tried again after a transient failure; the last failure is raised as is."""
    attempt = 1
    while True:
        try:
            return call()
        except Exception as exc:
            if attempt == ATTEMPTS or not transient(exc):
                raise
            delay = backoff(attempt)
            info(
                f"{what}: {describe(exc)}; trying again in {delay:.2g}s ({attempt}/{ATTEMPTS - 1})"
            )
            time.sleep(delay)
            attempt += 1


def backoff(attempt: int) -> float:
    """Seconds before try `attempt + 1`: $LABELER_HUB_BACKOFF × 2^(attempt-1), at most 30."""
    return min(settings.hub_backoff() * 2 ** (attempt - 1), 30.0)


def transient(exc: BaseException | None) -> bool:
    """True for failures worth another try: 5xx, 429, timeouts, dropped connections."""
    while exc is not None:
        if isinstance(exc, OfflineModeIsEnabled):
            return False
        if isinstance(exc, _NETWORK):
            return True
        if isinstance(exc, HfHubHTTPError):
            status = exc.response.status_code
            return status == 429 or status >= 500
        exc = exc.__cause__
    return False


@contextmanager
def hub_errors(remote: Remote, again: str = AGAIN) -> Iterator[None]:
    """Turn huggingface_hub and network failures into one HubError line (`labeler.network`);
    `again` is what the hint says of running the command again (a push adds that it resumes
    where it stopped)."""
    with network.hub_errors(remote.repo, endpoint=remote.endpoint, again=again):
        yield
