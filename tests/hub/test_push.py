"""`labeler push` against the Hub-compatible test server: commits, tags, card merge, refusals."""

from __future__ import annotations

import json

import huggingface_hub.constants
import pytest
from click.testing import CliRunner
from huggingface_hub import CommitOperationAdd, DatasetCard, HfApi

from labeler.cli import cli
from labeler.errors import HubError

REPO = "lab/utility-labels"


def _card(hub, revision: str = "main") -> DatasetCard:
    repo = hub.repo(REPO)
    return DatasetCard(repo.resolve(revision).files["README.md"].decode())


def _configs(card: DatasetCard) -> dict[str, list]:
    return {c["config_name"]: c["data_files"] for c in card.data.configs}


def test_push_makes_one_commit_with_files_card_and_a_tag(hub, write):
    v1 = write()
    result = CliRunner().invoke(cli, ["push", str(v1), "--repo", REPO])

    assert result.exit_code == 0, result.output
    assert (
        'load_dataset("lab/utility-labels", "utility.nq-sample.smollm2-135m", '
        'revision="utility.nq-sample.smollm2-135m.v1")\n'
    ) in result.stdout
    commits = [line for line in hub.log if "/commit/" in line]
    assert commits == ["POST /api/datasets/lab/utility-labels/commit/main"]  # one atomic commit
    repo = hub.repo(REPO)
    head = repo.resolve("main")
    for name in ("data-00000.jsonl", "manifest.json", "README.md"):
        assert head.files[f"utility/nq-sample/smollm2-135m/v1/{name}"] == (v1 / name).read_bytes()
    assert repo.tags == {"utility.nq-sample.smollm2-135m.v1": head.sha}
    assert _configs(_card(hub)) == {
        "utility.nq-sample.smollm2-135m": [
            {"split": "train", "path": "utility/nq-sample/smollm2-135m/v1/data-00000.jsonl"}
        ]
    }
    card = _card(hub)
    assert card.data.license == "cc-by-sa-3.0"  # from the version's own card
    assert (
        "| `utility.nq-sample.smollm2-135m` | utility | nq-sample | smollm2-135m | v1 |"
        in card.text
    )


def test_second_config_keeps_the_first_and_the_prose_people_wrote(hub, write):
    runner = CliRunner()
    assert runner.invoke(cli, ["push", str(write()), "--repo", REPO]).exit_code == 0
    # someone edits the card on the Hub: a paragraph and a config of their own
    card = _card(hub)
    card.text = card.text.replace("## Configs", "Curated by the lab; see our paper.\n\n## Configs")
    card.data.configs = card.data.configs + [
        {"config_name": "human-notes", "data_files": "notes/*.csv"}
    ]
    HfApi(endpoint=hub.url).create_commit(
        REPO,
        [CommitOperationAdd("README.md", str(card).encode())],
        commit_message="edit card",
        repo_type="dataset",
    )

    second = write(dataset="nq-sample-2q", n=2)
    result = runner.invoke(cli, ["--verbose", "push", str(second), "--repo", REPO])

    assert result.exit_code == 0, result.output
    card = _card(hub)
    assert _configs(card) == {
        "utility.nq-sample.smollm2-135m": [
            {"split": "train", "path": "utility/nq-sample/smollm2-135m/v1/data-00000.jsonl"}
        ],
        "human-notes": "notes/*.csv",
        "utility.nq-sample-2q.smollm2-135m": [
            {"split": "train", "path": "utility/nq-sample-2q/smollm2-135m/v1/data-00000.jsonl"}
        ],
    }
    assert "Curated by the lab; see our paper." in card.text
    assert "| `utility.nq-sample-2q.smollm2-135m` |" in card.text
    assert "human-notes" not in card.text  # not a labeler config: not in the generated table
    assert "+- config_name: utility.nq-sample-2q.smollm2-135m\n" in result.stdout  # the card diff


def test_pushing_an_existing_version_is_refused(hub, write):
    v1 = write()
    runner = CliRunner()
    assert runner.invoke(cli, ["push", str(v1), "--repo", REPO]).exit_code == 0
    before = hub.request_count

    result = runner.invoke(cli, ["push", str(v1), "--repo", REPO])

    assert result.exit_code == 1
    assert isinstance(result.exception, HubError)
    assert result.exception.line() == (
        "lab/utility-labels: utility/nq-sample/smollm2-135m/v1 is already on the Hub "
        "(tag 'utility.nq-sample.smollm2-135m.v1'); a published version is never pushed again "
        "(build a new version, or get this one with `labeler pull lab/utility-labels "
        "--revision utility.nq-sample.smollm2-135m.v1`)"
    )
    assert not [
        line for line in hub.log[before:] if line.startswith("POST") and "/repos/" not in line
    ]


def test_push_without_folders_publishes_every_unpublished_version_once(hub, write, tmp_path):
    out = tmp_path / "out"
    v1, v2 = write(), write(n=2)
    other = write(dataset="nq-sample-2q", n=2)
    runner = CliRunner()

    result = runner.invoke(cli, ["push", "--repo", REPO, "--out", str(out)])

    assert result.exit_code == 0, result.output
    repo = hub.repo(REPO)
    assert sorted(repo.tags) == [
        "utility.nq-sample-2q.smollm2-135m.v1",
        "utility.nq-sample.smollm2-135m.v1",
        "utility.nq-sample.smollm2-135m.v2",
    ]
    # v1 and v2 of one config go in two commits, so each tag pins a card naming its own version
    for tag, folder in (
        ("utility.nq-sample.smollm2-135m.v1", v1),
        ("utility.nq-sample.smollm2-135m.v2", v2),
    ):
        files = _configs(_card(hub, tag))["utility.nq-sample.smollm2-135m"]
        assert files == [
            {"split": "train", "path": f"utility/nq-sample/smollm2-135m/{folder.name}/data-00000.jsonl"}
        ]
    assert (
        repo.tags["utility.nq-sample-2q.smollm2-135m.v1"]
        == repo.tags["utility.nq-sample.smollm2-135m.v1"]
    )
    assert _configs(_card(hub))["utility.nq-sample-2q.smollm2-135m"][0]["path"].startswith(
        f"utility/nq-sample-2q/smollm2-135m/{other.name}/"
    )
    record = json.loads((out / ".published.json").read_text())
    assert sorted(record[f"{hub.url}/datasets/{REPO}"]) == [
        "utility/nq-sample-2q/smollm2-135m/v1",
        "utility/nq-sample/smollm2-135m/v1",
        "utility/nq-sample/smollm2-135m/v2",
    ]

    before = hub.request_count
    again = runner.invoke(cli, ["push", "--repo", REPO, "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert "nothing to push" in again.stdout
    assert hub.request_count == before  # the local record answers: no request at all


def test_an_older_version_after_a_newer_one_is_refused(hub, write):
    v1, v2 = write(), write(n=2)
    runner = CliRunner()
    assert runner.invoke(cli, ["push", str(v2), "--repo", REPO]).exit_code == 0

    result = runner.invoke(cli, ["push", str(v1), "--repo", REPO])

    assert isinstance(result.exception, HubError)
    assert str(result.exception) == (
        "lab/utility-labels: utility/nq-sample/smollm2-135m/v1 is older than v2 already on the "
        "Hub; versions of a config are published in order"
    )


def test_dry_run_prints_operations_and_card_diff_and_sends_nothing(hub, write, tmp_path):
    v1 = write()

    result = CliRunner().invoke(
        cli, ["push", "--repo", REPO, "--out", str(tmp_path / "out"), "--dry-run"]
    )

    assert result.exit_code == 0, result.output
    assert hub.log and all(line.startswith(("GET", "HEAD")) for line in hub.log)  # reads only
    assert hub.repos == {}
    assert not (tmp_path / "out" / ".published.json").exists()
    for text in (
        "create repo",
        "utility/nq-sample/smollm2-135m/v1/data-00000.jsonl",
        "README.md",
        "utility.nq-sample.smollm2-135m.v1",
        "+configs:",
        "planned",
    ):
        assert text in result.stdout
    assert f"{(v1 / 'data-00000.jsonl').stat().st_size:,} bytes" in result.stdout


def test_a_corrupted_local_version_is_not_pushed(hub, write):
    v1 = write()
    with (v1 / "data-00000.jsonl").open("a", encoding="utf-8") as f:
        f.write("\n")

    result = CliRunner().invoke(cli, ["push", str(v1), "--repo", REPO])

    assert "sha256" in str(result.exception)
    assert hub.request_count == 0


def test_a_symlink_in_a_version_is_refused_by_name_and_nothing_sent(hub, write, tmp_path):
    v1 = write()
    secret = tmp_path / "secret.txt"
    secret.write_text("not part of any artifact\n")
    card = v1 / "README.md"
    card.unlink()
    card.symlink_to(secret)  # README.md pointing outside the folder

    result = CliRunner().invoke(cli, ["push", str(v1), "--repo", REPO])

    assert str(result.exception) == f"{card}: a symlink (to {secret}), not a file of the version"
    assert hub.request_count == 0


def test_an_edited_card_is_not_pushed(hub, write):
    v1 = write()
    card = v1 / "README.md"
    card.write_text(card.read_text().replace("license: cc-by-sa-3.0", "license: mit"))

    result = CliRunner().invoke(cli, ["push", str(v1), "--repo", REPO])

    assert str(result.exception).startswith(f"{card}: sha256 mismatch: manifest.json says ")
    assert hub.request_count == 0


def test_a_version_folder_no_hub_tag_can_name_is_named(hub, write, tmp_path):
    v1 = write()  # written before versions were checked: renamed to what git refuses
    bad = v1.with_name("v1.lock")
    v1.rename(bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    (bad / "manifest.json").write_text(json.dumps({**manifest, "version": "1.lock"}))

    result = CliRunner().invoke(cli, ["push", "--out", str(tmp_path / "out"), "--repo", REPO])

    assert str(result.exception) == (
        f"{bad}: 'utility.nq-sample.smollm2-135m.v1.lock' cannot be a Hub tag (a git ref name: "
        "no '..', no leading '-' or '.', no trailing '.' or '.lock')")
    assert hub.request_count == 0


def test_a_repo_id_without_namespace_is_refused(hub, write):
    result = CliRunner().invoke(cli, ["push", str(write()), "--repo", "labels"])

    assert str(result.exception) == "'labels' is not a repo id"
    assert result.exception.hint == "write it as NAMESPACE/NAME"


def test_push_without_a_token_says_how_to_get_one(hub, write, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")

    result = CliRunner().invoke(cli, ["push", str(write()), "--repo", REPO])

    assert result.exception.line() == (
        "lab/utility-labels: no Hugging Face token to write with "
        "(set HF_TOKEN or run `hf auth login`)"
    )
    assert hub.request_count == 0


def test_offline_mode_is_named_not_retried(hub, write, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)

    result = CliRunner().invoke(cli, ["push", str(write()), "--repo", REPO])

    assert result.exception.line() == (
        "lab/utility-labels: offline mode is on (HF_HUB_OFFLINE=1) "
        "(unset HF_HUB_OFFLINE to reach the Hub)"
    )
    assert hub.request_count == 0


def test_a_root_card_whose_configs_differ_in_licence_says_other_and_lists_each(hub, write):
    runner = CliRunner()
    assert runner.invoke(cli, ["push", str(write()), "--repo", REPO]).exit_code == 0
    assert _card(hub).data.license == "cc-by-sa-3.0"
    # MS MARCO's terms (non-commercial): the Hub's `other`
    msmarco = write(dataset="msmarco-fqa", n=2, license="other")
    assert runner.invoke(cli, ["push", str(msmarco), "--repo", REPO]).exit_code == 0

    card = _card(hub)
    assert card.data.license == "other"  # never the first config's licence for all
    assert card.data.labeler_licenses == {"utility.msmarco-fqa.smollm2-135m": "other",
                                          "utility.nq-sample.smollm2-135m": "cc-by-sa-3.0"}
    assert card.data.license_details == (
        "The configs carry different licences: utility.msmarco-fqa.smollm2-135m: other; "
        "utility.nq-sample.smollm2-135m: cc-by-sa-3.0.")
    assert "| `utility.nq-sample.smollm2-135m.v1` | cc-by-sa-3.0 |" in card.text
    assert "| `utility.msmarco-fqa.smollm2-135m.v1` | other |" in card.text


@pytest.mark.parametrize("made", [False, True])
def test_a_push_of_a_folder_without_versions_exits_2_naming_it(tmp_path, made):
    """Not "every version under nonexist is published" and exit 0 (issue 49): a missing or
    empty --out is a mistake, named before the Hub is asked anything."""
    out = tmp_path / "nonexist"
    if made:
        (out / "utility").mkdir(parents=True)
    result = CliRunner().invoke(cli, ["push", "--repo", "me/x", "--out", str(out)])
    assert result.exit_code == 2, result.output
    said = "holds no artifact version" if made else "is not a folder"
    assert f"{out} {said}" in " ".join(result.output.split())
