"""A version folder's card: each config's fingerprint and features, and `datasets` loading each
version's own records with them (issue 22, items 1 and 6).

The records are the three real utility records of fixtures/ (nq-sample, pool hgp, SmolLM2): a
human gold passage that was not retrieved has rank null, so every candidate's `rank` is null.
"""

from __future__ import annotations

import hashlib
import shutil

from huggingface_hub import DatasetCard, DatasetCardData

from labeler.artifacts.manifest import data_files
from labeler.lines import read_jsonl
from labeler.workflows.validate import validate_path


def _sha256sum_of_sha256sum(folder) -> str:
    """What `sha256sum data-*.jsonl | sha256sum` prints in `folder`."""
    lines = "".join(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}\n"
                    for f in data_files(folder))
    return hashlib.sha256(lines.encode()).hexdigest()


def test_each_config_names_its_files_fingerprint(write, records):
    folder = write(records)
    [config] = DatasetCard.load(folder / "README.md").data.configs
    assert config["description"] == (
        "The data table of utility nq-sample × smollm2-135m v1; its files' fingerprint "
        f"(sha256sum data-*.jsonl | sha256sum): {_sha256sum_of_sha256sum(folder)}")
    assert validate_path(folder) == []  # `labeler validate` accepts the card


def test_the_card_names_the_hub_repos_it_extends_as_the_hub_does(write, records, manifest):
    # KILT NQ's records, with the TriviaQA questions' repo beside them as for `tq`
    manifest["source_repos"] = ["facebook/kilt_tasks", "mandarjoshi/trivia_qa"]
    card = DatasetCard.load(write(records, dataset="nq") / "README.md")
    assert card.data.source_datasets == ["extended|facebook/kilt_tasks",
                                         "extended|mandarjoshi/trivia_qa"]


def test_the_card_states_language_source_and_features(write, records):
    card = DatasetCard.load(write(records) / "README.md")
    assert isinstance(card.data, DatasetCardData)
    # the Hub's convention: nq-sample is bundled, read from no Hub dataset repo
    assert card.data.language == ["en"] and card.data.source_datasets == ["original"]
    [info] = card.data.dataset_info
    assert info["config_name"] == "default"
    features = {f["name"]: f for f in info["features"]}
    assert list(features)[:3] == ["qid", "question", "answers"]  # the schema's order
    assert features["answers"] == {"name": "answers", "list": "string"}
    ranks = {f["name"]: f for f in features["candidates"]["list"]}["rank"]
    assert ranks == {"name": "rank", "dtype": "int64"}  # null in every record, typed all the same
    assert "loglikelihood" not in {f["name"] for f in features["candidates"]["list"]}  # optional, absent


def test_versions_of_two_llms_and_a_rebuilt_one_each_load_their_own_records(
        write, records, tmp_path):
    """Three `v1` folders with the same configs, loaded one after another through one cache:
    two LLMs' (different records), then the first deleted and built again with fewer."""
    from datasets import Value, load_dataset

    cache = str(tmp_path / "datasets-cache")
    mine, theirs = write(records), write(records[:2], llm="other-llm")
    loaded = [load_dataset(str(f), split="train", cache_dir=cache) for f in (mine, theirs)]
    assert [ds.to_list() for ds in loaded] == [records, records[:2]]
    assert [ds.features["candidates"].feature["rank"] for ds in loaded] == [Value("int64")] * 2
    shutil.rmtree(mine)
    rebuilt = write(records[1:])
    assert rebuilt == mine
    assert load_dataset(str(rebuilt), "default", split="train",
                        cache_dir=cache).to_list() == records[1:]
    assert [r for _, r in read_jsonl(rebuilt / "data-00000.jsonl")] == records[1:]


def test_the_card_says_how_many_gold_references_named_only_a_title(write, records, manifest):
    manifest["corpus_gold"] = {"gold": 7, "in_corpus": 4, "queries_with_gold": 5,
                               "queries_with_gold_in_corpus": 3, "title_only": 2}
    card = (write(records) / "README.md").read_text()
    assert ("| human gold in the corpus | 4 of 7 gold passages (by passage id, else identical "
            "text), for 3 of 5 queries with gold; 2 of the missing are KILT provenance naming "
            "only a page's title (paragraph 0), which is every passage's title and no "
            "passage's text, so it maps onto none |") in card


def test_the_card_says_how_many_queries_were_left_out(write, records, manifest):
    """A served model's server refused a prompt of each as too long (the manifest's
    `unanswered`): the card's statistics count them; a version without any has no such row,
    and both load and validate."""
    from datasets import load_dataset

    left_out = "| queries left out: the server refused a prompt of each as too long"
    plain = write(records, llm="all-answered")
    manifest["unanswered"] = [{"qid": "nq-open-dev-oracle-7", "reason": "too long"},
                              {"qid": "nq-open-dev-oracle-9", "reason": "too long"}]
    folder = write(records)
    card = (folder / "README.md").read_text()
    assert f"| queries | 3 |\n{left_out}" in card
    assert "each with the server's reason) | 2 |\n| candidate passages labelled |" in card
    assert left_out not in (plain / "README.md").read_text()
    assert validate_path(folder) == []
    assert load_dataset(str(folder), split="train").num_rows == 3
