"""`--llm llama3.1-8b` against the tests' Hub server serving a tiny random-weight model in the
real repo's layout (tests/support/hub_models.py): resolved, downloaded and loaded through the real
huggingface_hub and transformers code in a fresh process; and a build that cannot pool
fails before any of the model's files is asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.hub_models import LLAMA, SHARDS, seed_llama

FIXTURES = Path(__file__).parents[1] / "fixtures"
GENERATE = (
    "import json\n"
    "from labeler.llm import Sampling, chat, load_backend\n"
    "backend = load_backend('llama3.1-8b', use_cache=False)\n"
    "[[answer]] = backend.generate([chat('Who wrote Hamlet?')], Sampling(max_tokens=8))\n"
    "print(json.dumps([backend.model_id, backend.revision, answer.text,\n"
    "                  backend.render(chat('hi'))]))\n"
)


def _online(hub, tmp_path) -> dict:
    """A fresh process's environment with HF_ENDPOINT at `hub` and empty caches."""
    return {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0",
            "TRANSFORMERS_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0",
            "HF_HOME": str(tmp_path / "hf-fresh"), "LABELER_CACHE_DIR": str(tmp_path / "cache")}


def test_llama_alias_downloads_and_generates_through_the_hub(hub, llama_repo, tmp_path):
    commit = seed_llama(hub, llama_repo)

    run = subprocess.run([sys.executable, "-c", GENERATE], env=_online(hub, tmp_path),
                         capture_output=True, text=True, timeout=300, check=False)

    assert run.returncode == 0, run.stderr[-2000:]
    model_id, revision, answer, rendered = json.loads(run.stdout.splitlines()[-1])
    assert (model_id, revision) == (LLAMA, commit)  # the manifest's revision: the Hub commit
    assert isinstance(answer, str)
    assert rendered.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>")
    assert rendered.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    fetched = {line.rsplit("/", 1)[-1] for line in hub.log if line.startswith(f"GET /{LLAMA}/")}
    shards = {f"model-{i:05d}-of-{SHARDS:05d}.safetensors" for i in range(1, SHARDS + 1)}
    assert shards | {"config.json", "model.safetensors.index.json", "tokenizer.json"} <= fetched


def test_a_build_that_cannot_pool_fails_before_a_file_of_the_model_is_asked_for(hub, llama_repo, tmp_path):
    seed_llama(hub, llama_repo)
    out = tmp_path / "out"

    run = subprocess.run(
        [sys.executable, "-m", "labeler", "build", "--dataset",
         f"jsonl:{FIXTURES / 'flashrag_nq_test.jsonl'}", "--llm", "llama3.1-8b", "--out", out],
        env=_online(hub, tmp_path), capture_output=True, text=True, timeout=300, check=False)

    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        (f"error: field 'corpus': dataset 'jsonl:{FIXTURES / 'flashrag_nq_test.jsonl'}' has no "
        "passage corpus to retrieve from (pass --corpus NAME (kilt-w100, wiki-dpr, "
        "msmarco-passage, kilt-wikipedia) or FILE (FlashRAG corpus jsonl), or --run FILE)")]
    # the Hub was asked only whether this user may download the model, for none of its files
    assert [line for line in hub.log if LLAMA in line] == [f"GET /api/models/{LLAMA}/auth-check"]
    assert not out.exists()
