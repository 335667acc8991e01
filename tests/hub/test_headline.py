"""The README's headline, `labeler build --dataset nq --llm llama3.1-8b`, as written, in a fresh
process against the tests' Hub server mirroring every repo it reads
(tests/support/hub_mirror.py) and serving a tiny random-weight model as
meta-llama/Llama-3.1-8B-Instruct (tests/support/hub_models.py): KILT NQ's dev records, the
kilt-w100 corpus cut from KILT's pages, retrieval, labelling."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support.hub_mirror import mirror_env
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
