"""README.md of a version folder: cards/<artifact>.md.j2 under Hub YAML built by DatasetCardData.

Each table is a config whose `description` carries the fingerprint of its files' contents:
`datasets` keys its cache of a local folder by the folder's name (every first version is
`v1`) and the hash of its card's configs and `dataset_info`, so without it two versions with
the same card (two LLMs' `v1`) would share one cache entry and load each other's records.
"""

from __future__ import annotations

import hashlib

from huggingface_hub import DatasetCard, DatasetCardData

from labeler.artifacts.manifest import DATA, table_of
from labeler.departures import DEPARTURES
from labeler.paths import file_label
from labeler.resources import card_path

#: The Hub's `size_categories` labels, each bucket ten times the one before.
_SIZE_LABELS = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M",
                "100M<n<1B", "1B<n<10B", "10B<n<100B", "100B<n<1T")


def render_card(manifest: dict, metadata: dict, context: dict | None = None,
                features: dict[str, list[dict]] | None = None) -> str:
    """The dataset card text for the version `manifest` describes.

    `metadata` is the task's card metadata (pretty_name, task_categories, tags); the licence
    is the manifest's (the source's). The template sees `manifest`, `stats` (the manifest's;
    missing keys render as "n/a"), `records` (the record count), `data_files`, every
    metadata field (`license`, `pretty_name`, ...), `file_label` (how a manifest's file
    reads), `paper_departures` (the method's departures from its source, `labeler.departures`)
    and the task's `context` (its `card_context(manifest)`). `features` (table -> its
    records' `features`, labeler.artifacts.features) become each config's `dataset_info`.
    """
    artifact = manifest["artifact"]
    records = manifest["counts"]["records"]
    files = sorted(manifest["files"])
    names = {table: "default" if table == DATA else table for table in tables(files)}
    # the Hub's convention: `extended|<hub id>` for each dataset repo the records were read
    # from; `original` where none was (a bundled sample, a local file)
    source = [f"extended|{repo}" for repo in manifest.get("source_repos") or []] or ["original"]
    data = DatasetCardData(
        language=[manifest["language"]] if manifest.get("language") else None,
        license=manifest.get("license") or "unknown",
        task_categories=metadata.get("task_categories", []),
        size_categories=[size_category(records)],
        pretty_name=f"{metadata.get('pretty_name', artifact)}: {manifest['dataset']} × "
                    f"{manifest['llm']}",
        tags=metadata.get("tags", []),
        source_datasets=source,
        configs=[{"config_name": name, "data_files": f"{table}-*.jsonl",
                  "description": _description(manifest, table)} for table, name in names.items()],
        dataset_info=[{"config_name": name, "features": features[table]}
                      for table, name in names.items() if table in (features or {})] or None,
    )
    card = DatasetCard.from_template(
        data, template_path=str(card_path(artifact)),
        manifest=manifest, stats=manifest.get("stats", {}), records=records, data_files=files,
        file_label=file_label, paper_departures=DEPARTURES.get(artifact, ()), **(context or {}),
    )
    return str(card)


def _description(manifest: dict, table: str) -> str:
    """What a config holds, with the fingerprint of its files: the sha256 of `sha256sum`'s
    lines for them (as `sha256sum <table>-*.jsonl | sha256sum` prints it)."""
    lines = "".join(f"{sha}  {name}\n" for name, sha in sorted(manifest["files"].items())
                    if table_of(name) == table)
    return (f"The {table} table of {manifest['artifact']} {manifest['dataset']} × "
            f"{manifest['llm']} v{manifest['version']}; its files' fingerprint "
            f"(sha256sum {table}-*.jsonl | sha256sum): "
            f"{hashlib.sha256(lines.encode()).hexdigest()}")


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
