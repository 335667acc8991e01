"""`labeler pull` and `datasets.load_dataset` against versions pushed to the test server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from huggingface_hub import CommitOperationAdd, HfApi

from labeler.artifacts import load_artifact
from labeler.cli import cli
from labeler.errors import ArtifactError, HubError, UnknownNameError
from labeler.hub import pull, push

REPO = "lab/utility-labels"
V1 = "utility.nq-sample.smollm2-135m.v1"
#: a seer version with its pairs table (tests/scoring/fixtures/README.md)
SEER_V1 = Path(__file__).parents[1] / "scoring" / "fixtures" / "seer-v1"


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_push_then_pull_gives_identical_verified_files(hub, write, tmp_path):
    v1 = write()
    push([v1], repo=REPO)
    out = tmp_path / "pulled"

    result = CliRunner().invoke(cli, ["pull", REPO, "--out", str(out)])

    assert result.exit_code == 0, result.output
    pulled = out / "utility" / "nq-sample" / "smollm2-135m" / "v1"
    assert result.stdout.strip() == str(pulled)
    assert _files(pulled) == _files(v1)
    assert load_artifact(pulled).records == load_artifact(v1).records  # sha256-verified load
    assert sorted(p.name for p in out.iterdir()) == ["utility"]  # no temporary folder left behind

    again = CliRunner().invoke(cli, ["pull", REPO, "--out", str(out)])  # already here: kept
    assert again.exit_code == 0, again.output
    assert _files(pulled) == _files(v1)


def test_pull_by_tag_into_the_cache_picks_the_tagged_version(hub, write, tmp_path):
    v1, v2 = write(), write(n=2)
    push([v1], repo=REPO)
    push([v2], repo=REPO)
    push([write(dataset="nq-sample-2q", n=2)], repo=REPO)

    path = pull(REPO, revision=V1)  # the config is read off the tag

    assert path.parts[-4:] == ("utility", "nq-sample", "smollm2-135m", "v1")
    assert str(path).startswith(os.environ["HF_HOME"])
    assert _files(path) == _files(v1)
    newest = pull(REPO, config="utility.nq-sample.smollm2-135m")
    assert _files(newest) == _files(v2)


def test_pull_refuses_files_that_do_not_match_the_manifest(hub, write, tmp_path):
    push([write()], repo=REPO)
    # someone rewrites the data on the Hub behind the manifest's back
    HfApi(endpoint=hub.url).create_commit(
        REPO,
        [CommitOperationAdd("utility/nq-sample/smollm2-135m/v1/data-00000.jsonl", b'{"qid": "x"}\n')],
        commit_message="tamper",
        repo_type="dataset",
    )
    out = tmp_path / "pulled"

    with pytest.raises(ArtifactError, match=r"data-00000\.jsonl.*sha256") as caught:
        pull(REPO, out=out)

    assert "data-00000.jsonl" in caught.value.line()
    assert not (out / "utility").exists()
    assert [p.name for p in out.iterdir()] == []  # nothing half-written


def test_pull_names_the_configs_and_tags_it_knows(hub, write):
    push([write(), write(dataset="nq-sample-2q", n=2)], repo=REPO)
    runner = CliRunner()

    several = runner.invoke(cli, ["pull", REPO])
    assert isinstance(several.exception, HubError)
    assert several.exception.line() == (
        "lab/utility-labels: the repo has 2 labeler configs; say which one "
        "(--config utility.nq-sample-2q.smollm2-135m | utility.nq-sample.smollm2-135m)"
    )
    unknown = runner.invoke(cli, ["pull", REPO, "--config", "utility.nq-sampel.smollm2-135m"])
    assert isinstance(unknown.exception, UnknownNameError)
    assert "Did you mean 'utility.nq-sample.smollm2-135m'?" in str(unknown.exception)
    no_tag = runner.invoke(cli, ["pull", REPO, "--revision", "utility.nq-sample.smollm2-135m.v9"])
    assert no_tag.exception.line() == (
        "lab/utility-labels: no revision 'utility.nq-sample.smollm2-135m.v9' (tags: "
        "utility.nq-sample-2q.smollm2-135m.v1, utility.nq-sample.smollm2-135m.v1)"
    )
    missing = runner.invoke(cli, ["pull", "lab/nothing-here"])
    assert str(missing.exception) == (
        "lab/nothing-here: no such dataset repo, or it is private to another account"
    )


def test_load_dataset_with_a_version_tag_returns_that_versions_records(
    hub, write, records, tmp_path
):
    push([write()], repo=REPO)
    push([write(n=2)], repo=REPO)
    code = (
        "import json, sys, datasets\n"
        "for revision in sys.argv[1:]:\n"
        "    ds = datasets.load_dataset('lab/utility-labels', 'utility.nq-sample.smollm2-135m',"
        " revision=revision, split='train')\n"
        "    print(json.dumps(ds.to_list()))\n"
    )
    # a fresh process: datasets and huggingface_hub read these variables at import
    env = {
        **os.environ,
        "HF_DATASETS_OFFLINE": "0",
        "HF_HUB_OFFLINE": "0",
        "TRANSFORMERS_OFFLINE": "0",
        "HF_DATASETS_CACHE": str(tmp_path / "datasets-cache"),
    }
    run = subprocess.run(
        [sys.executable, "-c", code, V1, "utility.nq-sample.smollm2-135m.v2", "main"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 0, run.stderr[-2000:]
    v1, v2, main = (json.loads(line) for line in run.stdout.splitlines())
    assert v1 == records
    assert v2 == main == records[:2]


def test_the_root_cards_tag_for_a_second_table_loads_it(hub, tmp_path):
    """A seer version's pairs are their own config, `seer-pairs.<dataset>.<llm>`; the tag the
    root card gives to pin it is one the push made, and `load_dataset` at it loads the pairs."""
    from huggingface_hub import DatasetCard
    from support.loading import load_elsewhere, table_records

    folder = tmp_path / "out" / "seer" / "nq-sample" / "smollm2-135m" / "v1"
    shutil.copytree(SEER_V1, folder)
    push([folder], repo="lab/seer-labels")
    card = DatasetCard(hub.repo("lab/seer-labels").resolve("main").files["README.md"].decode())

    pairs = "seer-pairs.nq-sample.smollm2-135m"
    [row] = [line for line in card.text.splitlines() if line.startswith(f"| `{pairs}` |")]
    tag = row.split("|")[6].strip(" `")
    assert tag == "seer.nq-sample.smollm2-135m.v1"
    assert 'revision="<artifact>.<dataset>.<llm>.v<version>"' in card.text
    [(loaded, _)] = load_elsewhere([("lab/seer-labels", pairs, tag)],
                                   HF_DATASETS_CACHE=str(tmp_path / "datasets-cache"))
    assert loaded == table_records(folder, "pairs")


def test_a_pull_logged_to_a_file_draws_no_third_party_bar(hub, write, tmp_path):
    """huggingface_hub's "Fetching N files" tqdm bar stays out of a log (stderr not a
    terminal), in a fresh process as a batch job runs `labeler pull`."""
    push([write()], repo=REPO)
    run = subprocess.run(
        [sys.executable, "-m", "labeler", "pull", REPO, "--out", str(tmp_path / "pulled")],
        env={**os.environ, "HF_DATASETS_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"},
        check=False, capture_output=True, text=True, timeout=300)

    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert run.stdout.strip().endswith("utility/nq-sample/smollm2-135m/v1")
