"""README.md of a version folder: cards/<artifact>.md.j2 under Hub YAML built by DatasetCardData."""

from __future__ import annotations

from huggingface_hub import DatasetCard, DatasetCardData

from labeler.resources import card_path

#: Hub metadata per artifact kind; a kind not listed gets the generic entry.
METADATA = {
    "utility": {
        "pretty_name": "LLM-specific gold utilitarian passages",
        "task_categories": ["question-answering", "text-retrieval"],
        "tags": ["rag", "retrieval-augmented-generation", "passage-utility", "llm-specific-utility",
                 "labeler"],
    },
}
_GENERIC = {"task_categories": ["question-answering"], "tags": ["rag", "labeler"]}

#: Default licence of datasets derived from a source family (a manifest "license" wins).
SOURCE_LICENSES = {"nq": "cc-by-sa-3.0"}

#: The Hub's `size_categories` labels, each bucket ten times the one before.
_SIZE_LABELS = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M",
                "100M<n<1B", "1B<n<10B", "10B<n<100B", "100B<n<1T")


def render_card(manifest: dict, stats: dict, *, data_file: str) -> str:
    """The dataset card text for the version `manifest` describes, with the build's `stats`.

    The template sees `manifest`, `stats` (missing keys render as "n/a"), `records` (the record
    count), `data_file`, and every metadata field (`license`, `pretty_name`, ...).
    """
    artifact = manifest["artifact"]
    meta = METADATA.get(artifact, _GENERIC)
    records = manifest["counts"]["records"]
    data = DatasetCardData(
        license=manifest.get("license") or stats.get("license") or _default_license(manifest),
        task_categories=meta["task_categories"],
        size_categories=[size_category(records)],
        pretty_name=f"{meta.get('pretty_name', artifact)}: {manifest['dataset']} × {manifest['llm']}",
        tags=meta["tags"],
        configs=[{"config_name": "default", "data_files": data_file}],
    )
    card = DatasetCard.from_template(
        data, template_path=str(card_path(artifact)),
        manifest=manifest, stats=stats, records=records, data_file=data_file,
    )
    return str(card)


def size_category(n: int) -> str:
    """The Hub's `size_categories` label for `n` records, e.g. 250 -> "n<1K"."""
    bound = 1_000
    for label in _SIZE_LABELS:
        if n < bound:
            return label
        bound *= 10
    return "n>1T"


def _default_license(manifest: dict) -> str:
    family = manifest["dataset"].split("-")[0]
    return SOURCE_LICENSES.get(family, "other")
