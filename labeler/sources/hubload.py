"""The one place sources read Hub data: the pinned files of `hub_files.HUB_FILES` through
`huggingface_hub` (so a pinned commit reads from the local cache offline) and `datasets`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from labeler.errors import HubError
from labeler.network import FIRST_USE, hub_error, hub_errors, quiet_retries
from labeler.sources.hub_files import HubFiles
from labeler.sources.types import Source

SCRIPT = "datasets no longer runs loading scripts; labeler.sources.hub_files must name data files"


def load_hub(spec: HubFiles, *, what: str = "dataset", hint: str = ""):
    """(dataset, revision) of `spec`'s files as one `datasets.Dataset` split; `what` names it in
    the error ("dataset", "corpus 'wiki-dpr'"), `hint` adds another way round a failure.

    The revision is the pinned commit (for a branch, the commit it resolved to). Inside
    `heads.heads_only()` (a dry run) a big file the cache lacks gives its first rows only."""
    import datasets

    from labeler.sources.heads import read_head, wants_head

    with _mapped(spec, what, hint):
        if wants_head(spec):
            return datasets.Dataset.from_list(read_head(spec)), spec.revision
    paths, revision = download(spec, what=what, hint=hint)
    fmt = {"json": "json", "parquet": "parquet"}[spec.format]
    dataset = datasets.load_dataset(fmt, data_files={spec.split: paths}, split=spec.split)
    return dataset, revision


def read_from(source: Source, spec: HubFiles) -> Source:
    """`source`, saying it was read from `spec`'s repo (as well) and in its language."""
    source.repos = (*source.repos, spec.repo)
    source.language = spec.language
    return source


def download(spec: HubFiles, *, what: str = "dataset", hint: str = "") -> tuple[list[str], str]:
    """Local paths of `spec`'s files (downloaded once, then from the Hub cache) and the commit;
    HubError names the cause: no such repo, gated, only a loading script, offline."""
    from huggingface_hub import hf_hub_download

    with _mapped(spec, what, hint):
        paths = [hf_hub_download(spec.repo, name, revision=spec.revision, repo_type="dataset")
                 for name in spec.files]
    return paths, _commit(spec, paths[0])


def listed_bytes(spec: HubFiles) -> int | None:
    """The bytes of `spec`'s files before they are downloaded: the local Hub cache's copies
    where it holds them, else the Hub's listing (one request); None where neither can say
    (offline, unreachable: the download that follows says why)."""
    from huggingface_hub import HfApi, try_to_load_from_cache

    from labeler import settings

    cached = [try_to_load_from_cache(spec.repo, name, revision=spec.revision,
                                     repo_type="dataset") for name in spec.files]
    if all(isinstance(path, str) for path in cached):
        return sum(os.path.getsize(path) for path in cached)
    if settings.offline():
        return None
    try:
        with hub_errors(spec.repo):
            listed = HfApi().get_paths_info(spec.repo, list(spec.files), revision=spec.revision,
                                            repo_type="dataset")
    except HubError:
        return None
    sizes = [getattr(entry, "size", None) for entry in listed]
    return sum(sizes) if len(sizes) == len(spec.files) and None not in sizes else None


@contextmanager
def _mapped(spec: HubFiles, what: str, hint: str) -> Iterator[None]:
    """Within: a Hub or network failure reading `spec` is one HubError line
    (`labeler.network`), `hint` added to its own; a file the Hub lacks where the repo holds only
    a loading script says so."""
    try:
        with quiet_retries():
            yield
    except Exception as exc:
        error = hub_error(exc, repo=spec.repo, what=f"cannot load {what}")
        if error is None:
            raise
        script = _script(spec) if "no such file" in error.message else None
        if script:
            error = HubError(f"cannot load {what}: the repo holds only a loading script "
                             f"({script}), not {', '.join(spec.files)}", spec.repo, hint=SCRIPT)
        error.hint = f"{error.hint}; {hint}" if hint else error.hint
        raise error from exc


def fetch_url(url: str, *, what: str, repo: str, hint: str = "") -> str:
    """A file outside the Hub (a dataset's canonical download URL), downloaded once into the
    labeler cache and read from there after; a cut download resumes where it stopped (an HTTP
    range). HubError when it is not cached and cannot be had."""
    import httpx

    from labeler import settings
    from labeler.progress import progress_bar

    path = download_path(url)
    if path.exists():
        return str(path)
    advice = f"{FIRST_USE}; {hint}" if hint else FIRST_USE
    if settings.offline():
        raise HubError(f"cannot load {what}: {url} is not in the local cache and the Hub is "
                       "offline (HF_HUB_OFFLINE)", repo, hint=advice)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = _part(path)
    have = partial.stat().st_size if partial.exists() else 0  # a cut download resumes
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=60,
                          headers={"Range": f"bytes={have}-"} if have else {}) as response:
            if have and response.status_code == 416:  # the part was already whole
                response.close()
            else:
                response.raise_for_status()
                resumed = have and response.status_code == 206
                total = int(response.headers.get("Content-Length") or 0) + (have if resumed else 0)
                with partial.open("ab" if resumed else "wb") as out, progress_bar(
                        f"downloading {url.rsplit('/', 1)[-1]}", total) as advance:
                    advance(have if resumed else 0)
                    for chunk in response.iter_bytes(1 << 20):
                        out.write(chunk)
                        advance(len(chunk))
    except httpx.HTTPError as exc:
        error = hub_error(exc, repo=repo, what=f"cannot load {what}", endpoint=url)
        raise HubError(error.message, repo, hint=f"{error.hint}; {advice}") from exc
    partial.replace(path)
    return str(path)


def download_path(url: str) -> Path:
    """Where `fetch_url` keeps its copy of `url` in the labeler cache."""
    import hashlib

    from labeler import settings

    return settings.cache_dir() / "downloads" / (
        f"{hashlib.sha256(url.encode()).hexdigest()[:16]}-{url.rsplit('/', 1)[-1]}")


def to_download(url: str, size: int) -> int:
    """The bytes of `url` (`size` in all) that `fetch_url` has yet to write into the cache:
    none once downloaded, `size` less what a cut download already holds."""
    path = download_path(url)
    if path.exists():
        return 0
    return max(0, size - _part(path).stat().st_size) if _part(path).exists() else size


def _part(path: Path) -> Path:
    """Where `fetch_url` downloads `path` before it is whole."""
    return path.with_name(path.name + ".part")


def _script(spec: HubFiles) -> str | None:
    """The repo's loading script at the revision, if it has one (asked only on a failure)."""
    from huggingface_hub import HfApi

    try:
        files = HfApi().list_repo_files(spec.repo, revision=spec.revision, repo_type="dataset")
    except Exception:  # noqa: BLE001 - only a better message was at stake
        return None
    return next((f for f in files if f.endswith(".py") and "/" not in f), None)


def _commit(spec: HubFiles, path: str) -> str:
    """The commit a downloaded file came from: the pinned sha, or what a branch resolved to
    (the snapshot folder of the Hub cache is named by it)."""
    from pathlib import Path

    return spec.revision if len(spec.revision) == 40 else Path(path).parents[
        len(Path(spec.files[0]).parts) - 1].name


def rows(value) -> list[dict]:
    """A list of structs in either Arrow layout: list of dicts, or a dict of parallel lists."""
    if isinstance(value, dict):
        return [dict(zip(value, values)) for values in zip(*value.values())]
    return list(value or [])


def head(dataset, limit: int | None):
    """The first `limit` rows of a `datasets.Dataset` (all of them for None)."""
    return dataset if limit is None else dataset.select(range(min(limit, len(dataset))))
