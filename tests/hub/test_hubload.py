"""`load_hub`, the sources' one call of `datasets.load_dataset`, against the test server: the
revision it pins is the Hub commit, or the data's fingerprint once the Hub cannot be reached."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from labeler.hub import push

REPO = "lab/utility-labels"
CONFIG = "utility.nq-sample.smollm2-135m"
CODE = (
    "import json, sys\n"
    "from labeler.sources.hubload import load_hub\n"
    "dataset, revision = load_hub(sys.argv[1], config=sys.argv[2], split='train')\n"
    "print(json.dumps([dataset.to_list(), revision, dataset._fingerprint]))\n"
)


def _load_hub(endpoint: str, tmp_path) -> tuple[list[dict], str, str]:
    """(rows, revision, fingerprint) from a fresh process: datasets and huggingface_hub read
    HF_ENDPOINT and the offline switches at import."""
    env = {
        **os.environ,
        "HF_ENDPOINT": endpoint,
        "HF_DATASETS_OFFLINE": "0",
        "HF_HUB_OFFLINE": "0",
        "TRANSFORMERS_OFFLINE": "0",
        "HF_DATASETS_CACHE": str(tmp_path / "datasets-cache"),
    }
    run = subprocess.run(
        [sys.executable, "-c", CODE, REPO, CONFIG],
        check=False, env=env, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return tuple(json.loads(run.stdout.splitlines()[-1]))


def test_the_revision_is_the_hub_commit_then_the_fingerprint_when_unreachable(
    hub, write, records, tmp_path
):
    push([write()], repo=REPO)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"

    rows, revision, _ = _load_hub(hub.url, tmp_path)
    assert rows == records
    assert revision == hub.repo(REPO).branches["main"]

    cached, revision, fingerprint = _load_hub(closed, tmp_path)  # from the datasets cache
    assert cached == records
    assert revision == f"fingerprint:{fingerprint}"
