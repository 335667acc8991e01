"""The repo's root README.md: merge pushed versions into its `configs` and keep the rest.

Each pushed version sets its config (`<artifact>.<dataset>.<llm>`) to point at its own data
files, with the description (its files' fingerprint) and `dataset_info` (its features) of the
version's own card; every other config, every other metadata key and all prose written by
people stay as they are. The table of labeler configs in the prose lives between two HTML comments and is
rebuilt from the YAML on every push; a card without them gets the table appended.
"""

from __future__ import annotations

import difflib
import re

from huggingface_hub import DatasetCard

from labeler.artifacts.manifest import DATA, table_of
from labeler.hub.layout import Version

START, END = "<!-- labeler:configs start -->", "<!-- labeler:configs end -->"
#: a data file path in the layout labeler publishes: <artifact>/<dataset>/<llm>/v<version>/<file>
_LAYOUT = re.compile(r"^([^/]+)/([^/]+)/([^/]+)/v([^/]+)/[^/]+$")
#: metadata lists that grow with each artifact kind pushed into the repo
_UNION_KEYS = ("task_categories", "tags", "size_categories", "language", "source_datasets")
#: metadata merged config by config, not key by key
_PER_CONFIG = ("configs", "dataset_info", "pretty_name", "license")
#: metadata key: config name -> the licence of its newest version (from that version's card)
LICENSES = "labeler_licenses"


def merge_card(existing: str | None, versions: list[Version], repo: str) -> str:
    """The root card once `versions` (one per config) are published into `existing` (or none)."""
    card = DatasetCard(existing) if existing else DatasetCard(_new_card(repo))
    configs = list(card.data.get("configs") or [])
    # a card from before per-config licences: its configs keep the licence it said for all
    licenses = dict(card.data.get(LICENSES) or {
        c["config_name"]: card.data.get("license") for c in configs
        if version_folder(c) and card.data.get("license")})
    infos = _by_config(card.data.get("dataset_info"))
    for version in versions:
        version_card = DatasetCard((version.folder / "README.md").read_text(encoding="utf-8"))
        own = {c["config_name"]: c for c in version_card.data.get("configs") or []}
        own_infos = _by_config(version_card.data.get("dataset_info"))
        for name, files in version.configs.items():
            table = table_of(files[0])
            local = "default" if table == DATA else table  # its name in the version's card
            entry = {
                "config_name": name,
                "data_files": [{"split": "train", "path": f"{version.prefix}/{file}"}
                               for file in files],
                **{k: v for k, v in own.get(local, {}).items() if k == "description"},
            }
            at = next((i for i, c in enumerate(configs) if c.get("config_name") == name), None)
            if at is None:
                configs.append(entry)
            else:
                configs[at] = entry
            infos.pop(name, None)
            if local in own_infos:
                infos[name] = {**own_infos[local], "config_name": name}
            licenses[name] = version_card.data.get("license") or "unknown"
        _merge_metadata(card, version_card)
    card.data["configs"] = configs
    if infos:
        card.data["dataset_info"] = list(infos.values())
    _set_license(card, licenses)
    if not card.data.get("pretty_name"):
        card.data["pretty_name"] = repo.split("/")[-1]
    card.text = _with_table(card.text, configs, repo, card.data.get(LICENSES) or {})
    return str(card)


def card_diff(old: str | None, new: str) -> str:
    """Unified diff of the root card, remote before -> after the push."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        "README.md (on the Hub)",
        "README.md (after push)",
    )
    return "".join(lines)


def version_folder(config: dict) -> str | None:
    """The `<artifact>/<dataset>/<llm>/v<version>` folder a config's data files are in, if any."""
    files = config.get("data_files")
    paths = (
        [files]
        if isinstance(files, str)
        else [f["path"] if isinstance(f, dict) else f for f in files or []]
    )
    flat = [p for path in paths for p in ([path] if isinstance(path, str) else path)]
    folders = {p.rsplit("/", 1)[0] for p in flat if _LAYOUT.match(p)}
    return folders.pop() if len(folders) == 1 else None


def _merge_metadata(card: DatasetCard, version_card: DatasetCard) -> None:
    """Fill missing keys from a version's own card; grow the list-valued ones."""
    for key, value in version_card.data.to_dict().items():
        if key in _PER_CONFIG:
            continue
        current = card.data.get(key)
        if current is None:
            card.data[key] = value
        elif key in _UNION_KEYS and isinstance(current, list) and isinstance(value, list):
            card.data[key] = current + [v for v in value if v not in current]


def _by_config(infos: list | dict | None) -> dict[str, dict]:
    """A card's `dataset_info` (one mapping, or a list of them) by config name."""
    listed = [infos] if isinstance(infos, dict) else infos or []
    return {info.get("config_name", "default"): info for info in listed}


def _set_license(card: DatasetCard, licenses: dict[str, str]) -> None:
    """The repo's licence: its configs' one licence, or `other` with each config's listed in
    `license_details` when they differ (never one config's licence for all)."""
    card.data[LICENSES] = dict(sorted(licenses.items()))
    kinds = set(licenses.values())
    if len(kinds) == 1:
        card.data["license"] = kinds.pop()
        card.data.pop("license_details", None)
    elif kinds:
        card.data["license"] = "other"
        card.data["license_details"] = "The configs carry different licences: " + "; ".join(
            f"{name}: {license}" for name, license in sorted(licenses.items())) + "."


def _with_table(text: str, configs: list[dict], repo: str, licenses: dict[str, str]) -> str:
    rows = []
    for config in configs:
        folder = version_folder(config)
        if folder is None:
            continue  # a config written by people: not ours to list
        artifact, dataset, llm, version = folder.split("/")
        name = config["config_name"]
        tag = f"{artifact}.{dataset}.{llm}.{version}"  # the version's: its second tables' too
        rows.append(
            f"| `{name}` | {artifact} | {dataset} | {llm} | {version} | `{tag}` | "
            f"{licenses.get(name, 'unknown')} |"
        )
    table = "\n".join(
        [
            START,
            "| config | artifact | dataset | LLM | newest version | its tag | licence |",
            "|---|---|---|---|---|---|---|",
            *rows,
            END,
        ]
    )
    if START in text and END in text:
        head, rest = text.split(START, 1)
        return head + table + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n## Configs\n\n" + table + "\n"


def _new_card(repo: str) -> str:
    return f"""---
{{}}
---

# {repo.split("/")[-1]}

Labels of LLM behaviour for retrieval-augmented generation, made with labeler. Each config
is one table of an artifact × dataset × LLM and loads its newest version; every version also
has a tag, `<artifact>.<dataset>.<llm>.v<version>` (the table below names it), that pins each
of its configs, a second table's (`seer-pairs.…`, `rubric-candidates.…`) too:

```python
from datasets import load_dataset

ds = load_dataset("{repo}", "<config>", revision="<artifact>.<dataset>.<llm>.v<version>")
```

Each version lives in `<artifact>/<dataset>/<llm>/v<version>/` with its data, its
`manifest.json` (how it was made, and the sha256 of every data file) and its own card.

## Configs

{START}
{END}
"""
