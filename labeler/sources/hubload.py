"""The one place sources call `datasets.load_dataset` on the Hugging Face Hub."""

from __future__ import annotations

from labeler.errors import HubError


def load_hub(
    repo: str,
    *,
    config: str | None = None,
    split: str = "validation",
    data_files: str | None = None,
    what: str = "dataset",
    hint: str = "",
):
    """(rows, revision) of one split of a Hub dataset; adapters stop reading at their limit.
    `what` names it in the error ("dataset", "corpus 'wiki-dpr'"); `hint` adds another way.

    The revision is the Hub commit when the Hub answers, else the `datasets` cache
    fingerprint (offline, from the local cache), so manifests always pin something.
    """
    import datasets

    kwargs = {"data_files": {split: data_files}} if data_files else {}
    try:
        dataset = datasets.load_dataset(repo, config, split=split, **kwargs)
    except Exception as exc:  # datasets raises many types: offline, missing, gated, ...
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        first = "needs network on first use; later runs read the local cache"
        raise HubError(f"cannot load {what}: {reason}", repo,
                       hint=f"{first}; {hint}" if hint else first) from exc
    return dataset, _revision(repo, dataset)


def _revision(repo: str, dataset) -> str:
    import httpx
    from huggingface_hub import HfApi

    try:
        return HfApi().dataset_info(repo).sha
    except (OSError, httpx.HTTPError):  # offline, unreachable or refused: fingerprint instead
        return f"fingerprint:{dataset._fingerprint}"


def rows(value) -> list[dict]:
    """A list of structs in either Arrow layout: list of dicts, or a dict of parallel lists."""
    if isinstance(value, dict):
        return [dict(zip(value, values)) for values in zip(*value.values())]
    return list(value or [])


def head(dataset, limit: int | None):
    """The first `limit` rows of a `datasets.Dataset` (all of them for None)."""
    return dataset if limit is None else dataset.select(range(min(limit, len(dataset))))
