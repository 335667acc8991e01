"""`datasets.load_dataset(<version folder>)` gives every version its own records (issue 22,
item 1): from the folder and from the Hub, in one process and in another sharing its datasets
cache.

Two utility builds of the same nq-sample pools that differ only in the LLM, both `v1` with the
same configs: SmolLM2's (the session's nq2 build) and the scripted reader's
(tests/support/nq2.py); then their comparison. Before the cards carried each config's
fingerprint, `datasets` gave every `v1` one cache entry: the scripted `v1` loaded SmolLM2's
records.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from huggingface_hub import DatasetCard
from support.loading import card_tables, check_card_types, load_elsewhere, table_records
from support.nq2 import copy_nq2_build, scripted_utility

from labeler.artifacts.manifest import table_of
from labeler.cli import cli
from labeler.hub.layout import Version
from labeler.llm.cache import CachedBackend
from labeler.workflows.compare import compare

REPO = "lab/llm-utility"


@pytest.fixture(scope="module")
def folders(tmp_path_factory, nq2_build, smollm) -> list:
    """SmolLM2's utility v1, the scripted reader's, and their comparison's."""
    root = tmp_path_factory.mktemp("load-versions")
    run, calls, smol = copy_nq2_build(nq2_build, root)
    other, scripted = scripted_utility(run, root / "out")
    readers = {"smollm2-135m": CachedBackend(smollm, cache_dir=calls), "scripted": scripted}
    compared = compare([smol, other], out=root / "out", backends=readers, cache_dir=calls)
    return [smol, other, compared.path]


def test_each_folder_loads_its_own_records_here_and_in_another_process(folders, tmp_path):
    from datasets import load_dataset

    assert [f.name for f in folders] == ["v1"] * 3
    cache = tmp_path / "datasets-cache"
    # each folder as the cards say: no config name (the default), then each config by name
    loads = [(str(f), name) for f in folders for name in (None, *card_tables(f))]
    expected = [table_records(f, card_tables(f)[name or "default"])
                for f in folders for name in (None, *card_tables(f))]
    assert expected[0] != expected[2]  # the two LLMs' records differ

    here = [load_dataset(path, name, split="train", cache_dir=str(cache)).to_list()
            for path, name in loads]
    assert here == expected
    there = load_elsewhere([(path, name, None) for path, name in loads],
                           HF_DATASETS_CACHE=str(cache))
    assert [records for records, _ in there] == expected
    for folder in folders:
        check_card_types(folder, cache)


def test_each_config_pushed_loads_its_own_records_from_the_hub(folders, hub, tmp_path):
    result = CliRunner().invoke(cli, ["push", *map(str, folders), "--repo", REPO])
    assert result.exit_code == 0, result.output
    versions = [Version.read(f) for f in folders]
    # every config by its Hub name, on main and at its version's tag
    configs = [(v, name, table_of(files[0])) for v in versions
               for name, files in v.configs.items()]
    loads = [(REPO, name, revision) for v, name, _ in configs for revision in (None, v.tag)]
    expected = [table_records(v.folder, table) for v, _, table in configs for _ in (0, 1)]

    loaded = load_elsewhere(loads, HF_DATASETS_CACHE=str(tmp_path / "cache"))
    assert [records for records, _ in loaded] == expected
    root = DatasetCard(hub.repo(REPO).resolve("main").files["README.md"].decode())
    assert {i["config_name"] for i in root.data.dataset_info} == {n for _, n, _ in configs}
    assert root.data.language == ["en"] and root.data.source_datasets == ["original"]
    own = {name: DatasetCard.load(v.folder / "README.md").data.configs[0]["description"]
           for v, name, _ in configs}  # one config each: the data table
    assert {c["config_name"]: c["description"] for c in root.data.configs} == own
