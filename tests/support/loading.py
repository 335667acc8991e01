"""Version folders loaded with `datasets` as their cards tell a user to: each config, here or
in a fresh process (datasets and huggingface_hub read HF_ENDPOINT and HF_DATASETS_CACHE at
import), compared with the records of its files and the features its card states."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from huggingface_hub import DatasetCard

from labeler.artifacts.manifest import data_files, table_of
from labeler.cli import cli
from labeler.hub.layout import Version
from labeler.lines import read_jsonl

#: what a fresh process prints: each load's records and features (as a card states them),
#: one JSON pair a line
_LOADER = """
import json, sys, datasets
for path, name, revision in json.loads(sys.argv[1]):
    ds = datasets.load_dataset(path, name, revision=revision, split="train")
    print(json.dumps([ds.to_list(), ds.features._to_yaml_list()]))
"""


def table_records(folder: Path, table: str) -> list[dict]:
    """The records of `table`'s files in `folder`, in file order."""
    return [record for file in data_files(folder, table) for _, record in read_jsonl(file)]


def card_tables(folder: Path) -> dict[str, str]:
    """Config name -> the table whose files it loads, from `folder`'s card."""
    configs = DatasetCard.load(folder / "README.md").data.configs
    return {c["config_name"]: table_of(c["data_files"].replace("*", "00000")) for c in configs}


def check_card_types(folder: Path, cache_dir: Path) -> None:
    """Every config of `folder`'s card loads from the folder with the features its
    `dataset_info` states, and as many rows as its files hold records."""
    from datasets import Features, load_dataset

    card = DatasetCard.load(folder / "README.md")
    infos = {info["config_name"]: info for info in card.data.dataset_info}
    assert set(infos) == set(card_tables(folder))
    for name, table in card_tables(folder).items():
        loaded = load_dataset(str(folder), name, split="train", cache_dir=str(cache_dir))
        assert loaded.features == Features._from_yaml_list(infos[name]["features"]), name
        assert len(loaded) == len(table_records(folder, table)), name


def load_elsewhere(loads: list[tuple[str, str | None, str | None]], **env: str
                   ) -> list[tuple[list[dict], list[dict]]]:
    """(records, features) of each (path or repo, config, revision), loaded in that order by
    one fresh process online (the test server, where HF_ENDPOINT names it) with `env`."""
    run = subprocess.run(
        [sys.executable, "-c", _LOADER, json.dumps(loads)], check=False, capture_output=True,
        text=True, timeout=300, env={**os.environ, "HF_DATASETS_OFFLINE": "0",
                                     "HF_HUB_OFFLINE": "0", **env})
    assert run.returncode == 0, run.stderr[-3000:]
    return [tuple(json.loads(line)) for line in run.stdout.splitlines()]


def check_pushed(folder: Path, repo: str, cache_dir: Path) -> None:
    """`labeler push` the version in `folder` to `repo` on the test server; each of its
    configs then loads, by its Hub name at the version's tag, its files' records (keys that
    are null or absent alike: an open map loads with every record's keys) with the features
    of the version's card."""
    result = CliRunner().invoke(cli, ["push", str(folder), "--repo", repo])
    assert result.exit_code == 0, result.output
    version = Version.read(folder)
    infos = {i["config_name"]: i["features"]
             for i in DatasetCard.load(folder / "README.md").data.dataset_info}
    tables = {name: table_of(files[0]) for name, files in version.configs.items()}
    loads = [(repo, name, version.tag) for name in tables]
    loaded = load_elsewhere(loads, HF_DATASETS_CACHE=str(cache_dir))
    for (_, name, _), (records, features) in zip(loads, loaded, strict=True):
        table = tables[name]
        assert _without_nulls(records) == _without_nulls(table_records(folder, table)), name
        assert features == infos["default" if name == version.config else table], name


def _without_nulls(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
