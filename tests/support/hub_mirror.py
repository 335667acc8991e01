"""A mirror of every Hub repo the sources read, for the tests' Hub server: a few real rows
(tests/fixtures, re-laid into each repo's file format at its real path, recorded in
tests/fixtures/README.md) under the real repo id and the pinned commit of
`labeler.sources.hub_files`, with the repo's loading script where the real repo has one.

    with HubServer() as hub:
        env = mirror_env(hub, tmp_path)   # seeds the mirror; the variables a process needs
        subprocess.run([...], env={**os.environ, **env})
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import pyarrow.json
import pyarrow.parquet as pq

from labeler.sources.hub_files import (
    HUB_FILES,
    KILT_SOURCE_REPO,
    KILT_SOURCE_SCRIPT,
)
from labeler.sources.product_search import (
    ESCI_COMMIT,
    ESCI_FILES,
    ESCI_REPO,
    WANDS_COMMIT,
    WANDS_FILES,
    WANDS_REPO,
)
from support.hub_server import HubServer

FIXTURES = Path(__file__).parents[1] / "fixtures"
#: facebook/kilt_wikipedia's main branch: only its loading script and card
KILT_SOURCE_COMMIT = "368d91fb8e1ed16ee210a1ec800d659a8e7b0ae3"
KILT_SOURCE_PATH = "KILT/kilt_knowledgesource.json"  # served as dl.fbaipublicfiles.com has it


def _parquet(fixture: str) -> bytes:
    """A JSON-lines fixture as the Hub's parquet (nested fields as Arrow structs and lists)."""
    buf = io.BytesIO()
    pq.write_table(pyarrow.json.read_json(FIXTURES / fixture), buf)
    return buf.getvalue()


def _jsonl_gz(fixture: str, convert=lambda row: row) -> bytes:
    lines = (FIXTURES / fixture).read_text(encoding="utf-8").splitlines()
    return gzip.compress("".join(json.dumps(convert(json.loads(line))) + "\n"
                                 for line in lines if line.strip()).encode(), mtime=0)


def _script(name: str, url: str) -> bytes:
    """A loading script as the Hub repos hold them: it names the files it downloads."""
    return (f'"""{name}: dataset load script (datasets < 4)."""\n\nimport datasets\n\n'
            f'_DATASET_URLS = {{"data": "{url}"}}\n').encode()


#: source key -> the bytes of its one file, from the fixtures
CONTENT = {
    "nq": lambda: _parquet("kilt_nq_dev.jsonl"),
    "tq": lambda: _parquet("kilt_triviaqa_dev.jsonl"),
    "hotpotqa": lambda: _parquet("kilt_hotpotqa_dev.jsonl"),
    "fever": lambda: _parquet("kilt_fever_dev.jsonl"),
    "tq-questions": lambda: _parquet("trivia_qa_dev.jsonl"),
    "msmarco-fqa": lambda: (FIXTURES / "ms_marco_v1.1_dev.parquet").read_bytes(),
    "2wiki": lambda: (FIXTURES / "hub_mirror" / "2wiki_dev.jsonl").read_bytes(),
    "nq-open-train": lambda: (FIXTURES / "hub_mirror" / "flashrag_nq_train.jsonl").read_bytes(),
    "tq-train": lambda: (FIXTURES / "hub_mirror" / "flashrag_tq_train.jsonl").read_bytes(),
    "nq-open-test": lambda: (FIXTURES / "hub_mirror" / "flashrag_nq_test.jsonl").read_bytes(),
    "tq-test": lambda: (FIXTURES / "hub_mirror" / "flashrag_tq_test.jsonl").read_bytes(),
    "hotpotqa-train": lambda: _parquet("kilt_hotpotqa_train.jsonl"),
    "nq-tevatron": lambda: _jsonl_gz("tevatron_nq_dev.jsonl"),
    "tq-tevatron-distant": lambda: _jsonl_gz("tevatron_nq_dev.jsonl"),  # layout only
    "hotpotqa-distractor": lambda: _hotpot(),
    "wiki-dpr": lambda: _jsonl_gz("tevatron_wiki_corpus.jsonl"),
    "msmarco-passage": lambda: _jsonl_gz(
        "msmarco_qa_sentences_corpus.jsonl",
        lambda r: {"docid": r["doc_id"], "title": "-", "text": r["contents"]}),
}


def _hotpot() -> bytes:
    rows = json.loads((FIXTURES / "hotpot_dev_distractor.json").read_text(encoding="utf-8"))
    buf = io.BytesIO()
    pq.write_table(pyarrow.Table.from_pylist(rows), buf)
    return buf.getvalue()


def seed_mirror(hub: HubServer) -> str:
    """Seed `hub` with every repo of `HUB_FILES` (and KILT's knowledge source); returns the
    URL of the KILT knowledge source it serves (for LABELER_KILT_SOURCE)."""
    repos: dict[tuple[str, str], dict[str, bytes]] = {}
    for key, spec in HUB_FILES.items():
        files = repos.setdefault((spec.repo, spec.revision), {})
        files[spec.files[0]] = CONTENT[key]()
        if spec.script:
            files[spec.script] = _script(spec.repo, f"{spec.repo}/resolve/main/{spec.files[0]}")
    for (repo, revision), files in repos.items():
        configs = _configs(files)
        if configs:
            files["README.md"] = configs
        if len(revision) == 40:
            hub.seed(repo, files, sha=revision)
            continue
        scripts = {p: b for p, b in files.items() if p.endswith(".py")}  # a branch (a
        data = {p: b for p, b in files.items() if p not in scripts}  # conversion): main
        hub.seed(repo, scripts, sha=_sha(repo, "main"))  # keeps the script
        hub.seed(repo, data, sha=_sha(repo, revision), branch=revision)
    hub.seed(KILT_SOURCE_REPO, {KILT_SOURCE_SCRIPT: _script(KILT_SOURCE_REPO, KILT_SOURCE_PATH)},
             sha=KILT_SOURCE_COMMIT)
    pages = (FIXTURES / "hub_mirror" / "kilt_knowledgesource.jsonl").read_bytes()
    return hub.static(KILT_SOURCE_PATH, pages)


def seed_github(hub: HubServer) -> str:
    """Serve the GitHub files the sources read (WANDS's three tab-separated files and ESCI's
    two Git LFS parquet files, real rows: tests/fixtures/hub_mirror/wands, .../esci) as
    raw.githubusercontent.com and media.githubusercontent.com/media lay them out,
    `<owner>/<repo>/<commit>/<path>`; returns the base URL (for LABELER_GITHUB_RAW)."""
    for name, repo, commit, files in (("wands", WANDS_REPO, WANDS_COMMIT, WANDS_FILES),
                                      ("esci", ESCI_REPO, ESCI_COMMIT, ESCI_FILES)):
        for path in files.values():
            content = (FIXTURES / "hub_mirror" / name / Path(path).name).read_bytes()
            hub.static(f"{repo}/{commit}/{path}", content)
    return hub.url


def mirror_env(hub: HubServer, home: Path) -> dict[str, str]:
    """Seed the mirror; the environment a fresh process needs to read through it with empty
    Hugging Face caches under `home` (datasets and huggingface_hub read these at import)."""
    return {
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(home / "hf-home"),
        "HF_DATASETS_CACHE": str(home / "datasets-cache"),
        "LABELER_CACHE_DIR": str(home / "labeler-cache"),
        "HF_HUB_OFFLINE": "0",
        "HF_DATASETS_OFFLINE": "0",
        "TRANSFORMERS_OFFLINE": "0",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "LABELER_KILT_SOURCE": seed_mirror(hub),
        "LABELER_GITHUB_RAW": seed_github(hub),
    }


def _configs(files: dict[str, bytes]) -> bytes | None:
    """The card's `configs:` block, as the parquet-converted repos have one, for files laid out
    `<config>/<split>-NNNNN-of-NNNNN.parquet`; None for other layouts."""
    splits: dict[str, list[str]] = {}
    for path in sorted(p for p in files if p.endswith("-of-00001.parquet")):
        config, name = path.split("/")
        splits.setdefault(config, []).append(name.split("-")[0])
    if not splits:
        return None
    lines = ["---", "configs:"]
    for config, names in splits.items():
        lines += [f"- config_name: {config}", "  data_files:"]
        for split in names:
            lines += [f"  - split: {split}", f"    path: {config}/{split}-*"]
    return ("\n".join([*lines, "---", ""])).encode()


def _sha(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()
