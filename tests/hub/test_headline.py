"""docs/building.md's headline, `labeler build --dataset nq --llm llama3.1-8b`, as written, in a
fresh process against the tests' Hub server mirroring every repo it reads
(tests/support/hub_mirror.py) and serving a tiny random-weight model as
meta-llama/Llama-3.1-8B-Instruct (tests/support/hub_models.py): KILT NQ's dev records, the
kilt-w100 corpus cut from KILT's pages, retrieval, labelling."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support.hub_mirror import FIXTURES, KILT_SOURCE_PATH, mirror_env
from support.hub_models import LLAMA, seed_llama

from labeler.sources.hub_files import HUB_FILES


def test_the_headline_command_runs_as_written(hub, llama_repo, tmp_path):
    commit = seed_llama(hub, llama_repo)
    env = {**os.environ, **mirror_env(hub, tmp_path)}

    run = subprocess.run([sys.executable, "-m", "labeler", "build", "--dataset", "nq", "--llm",
                          "llama3.1-8b"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=900, check=False)

    assert run.returncode == 0, run.stderr[-3000:]
    [manifest_path] = (tmp_path / "out" / "utility" / "nq").glob("*/v1/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert (manifest["model_id"], manifest["model_revision"]) == (LLAMA, commit)
    assert manifest["source_revision"].startswith(HUB_FILES["nq"].revision)
    assert manifest["corpus_source"]["name"] == "kilt-w100"
    card = (manifest_path.parent / "README.md").read_text()
    assert "| corpus | `kilt-w100`, the dataset's default (3 passages" in card
    assert manifest["stats"]["queries"] == 5  # every served KILT NQ dev record
    # the first use said, once and before any download, what kilt-w100 costs
    assert run.stderr.count("kilt-w100: the first use downloads") == 1


def test_a_user_without_the_llamas_licence_is_told_before_any_download(hub, llama_repo,
                                                                       tmp_path):
    """The real meta-llama/Llama-3.1-8B-Instruct is gated: a user who has not accepted its
    licence (here: no token) gets one line saying so and what to do, before the dataset, the
    corpus or a weight is downloaded."""
    seed_llama(hub, llama_repo)
    env = {k: v for k, v in {**os.environ, **mirror_env(hub, tmp_path)}.items()
           if k != "HF_TOKEN"}
    asked = len(hub.log)

    run = subprocess.run([sys.executable, "-m", "labeler", "build", "--dataset", "nq", "--llm",
                          "llama3.1-8b"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300, check=False)

    assert run.returncode == 1
    assert run.stderr.splitlines() == [(
        f"error: cannot load model '{LLAMA}': the repo is gated and this user has not been "
        f"granted access (accept its licence on https://huggingface.co/{LLAMA}, then set a "
        "token: hf auth login)")]
    assert hub.log[asked:] == [f"GET /api/models/{LLAMA}/auth-check"]  # nothing downloaded


#: the most a dry run may fetch in one response (the issue's acceptance: no file over 10 MB)
DRY_RUN_MAX_BYTES = 10 * 2**20


def test_the_headline_dry_runs_download_no_corpus(hub, llama_repo, tmp_path):
    """`--dry-run` of the headline build and of the paper's reproduction reads the corpus's
    size from what is recorded beside its pin: KILT's pages (served here padded past 10 MB,
    as the real 34.76 GiB file is big) are never fetched, and no response is over 10 MB."""
    seed_llama(hub, llama_repo)
    env = {**os.environ, **mirror_env(hub, tmp_path), "COLUMNS": "200"}  # rows unwrapped
    pages = (FIXTURES / "hub_mirror" / "kilt_knowledgesource.jsonl").read_bytes()
    hub.static(KILT_SOURCE_PATH, pages + b"\n" * (DRY_RUN_MAX_BYTES + 1))  # blank lines

    for command in (["build"], ["reproduce", "utility-paper"]):
        run = subprocess.run([sys.executable, "-m", "labeler", *command, "--dataset", "nq",
                              "--llm", "llama3.1-8b", "--dry-run"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300, check=False)

        assert run.returncode == 0, run.stderr[-3000:]
        assert "34,000,000" in run.stdout and "estimate: the paper's count" in run.stdout, \
            run.stdout
    assert not any(path.endswith(KILT_SOURCE_PATH) for path, _ in hub.served)
    assert max(size for _, size in hub.served) < DRY_RUN_MAX_BYTES
    assert not (tmp_path / "labeler-cache" / "corpora").exists() and not (tmp_path / "out").exists()
