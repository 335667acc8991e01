"""README.md of a version folder: cards/<artifact>.md.j2 under Hub YAML built by DatasetCardData."""

from __future__ import annotations

from huggingface_hub import DatasetCard, DatasetCardData

from labeler.artifacts.manifest import DATA, table_of
from labeler.paths import file_label
from labeler.resources import card_path

#: The Hub's `size_categories` labels, each bucket ten times the one before.
_SIZE_LABELS = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M",
                "100M<n<1B", "1B<n<10B", "10B<n<100B", "100B<n<1T")


def render_card(manifest: dict, metadata: dict, context: dict | None = None) -> str:
    """The dataset card text for the version `manifest` describes.

    `metadata` is the task's card metadata (pretty_name, task_categories, tags); the licence
    is the manifest's (the source's). The template sees `manifest`, `stats` (the manifest's;
    missing keys render as "n/a"), `records` (the record count), `data_files`, every
    metadata field (`license`, `pretty_name`, ...), `file_label` (how a manifest's file
    reads) and the task's `context` (its `card_context(manifest)`).
    """
    artifact = manifest["artifact"]
    records = manifest["counts"]["records"]
    files = sorted(manifest["files"])
    data = DatasetCardData(
        license=manifest.get("license") or "unknown",
        task_categories=metadata.get("task_categories", []),
        size_categories=[size_category(records)],
        pretty_name=f"{metadata.get('pretty_name', artifact)}: {manifest['dataset']} × "
                    f"{manifest['llm']}",
        tags=metadata.get("tags", []),
        configs=[{"config_name": "default" if table == DATA else table,
                  "data_files": f"{table}-*.jsonl"} for table in tables(files)],
    )
    card = DatasetCard.from_template(
        data, template_path=str(card_path(artifact)),
        manifest=manifest, stats=manifest.get("stats", {}), records=records, data_files=files,
        file_label=file_label, **(context or {}),
    )
    return str(card)


def tables(files) -> list[str]:
    """The tables the file names `files` hold, "data" first."""
    return sorted({t for name in files if (t := table_of(name))}, key=lambda t: (t != DATA, t))


def size_category(n: int) -> str:
    """The Hub's `size_categories` label for `n` records, e.g. 250 -> "n<1K"."""
    bound = 1_000
    for label in _SIZE_LABELS:
        if n < bound:
            return label
        bound *= 10
    return "n>1T"
