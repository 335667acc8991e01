"""`labeler build` end to end with the real bundled SmolLM2, and its failures before any LLM work.

The pools come from tests/fixtures/nq_sample_minilm_top3.trec: the output of
`labeler retrieve --dataset nq-sample --limit 3 --k 3 --encoder minilm` (dense retrieval with the
bundled all-MiniLM-L6-v2 over nq-sample's 4,349-passage corpus), so the test skips re-encoding
the corpus (minutes on 2 CPU cores) and still labels real retrieved passages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.corpora import nq_subset, write_corpus
from support.processes import kill_when

from labeler.artifacts import load_artifact
from labeler.cli import cli
from labeler.errors import ArtifactError, InputError, ModelLoadError
from labeler.llm import LoglikelihoodRequest
from labeler.llm.call_store import cache_stats
from labeler.metrics import has_answer
from labeler.paths import file_sha256
from labeler.sources.passage import Passage
from labeler.tasks import utility
from labeler.workflows.validate import validate_path

FIXTURES = Path(__file__).parents[1] / "fixtures"
RUN = FIXTURES / "nq_sample_minilm_top3.trec"
NQ_JSONL = FIXTURES / "flashrag_nq_test.jsonl"


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> Path:
    """One call cache (--cache-dir) for this module: the hgp build reuses the rp build's answers
    for the same queries and gold passages instead of recomputing them."""
    return tmp_path_factory.mktemp("calls")


def _computed(cache_dir: Path) -> int:
    """LLM calls computed (cache misses) under `cache_dir`, all runs together."""
    return cache_stats(cache_dir).misses


def _data(folder: Path) -> bytes:
    """A version's data: its data files' bytes in file-name order."""
    return b"".join(p.read_bytes() for p in sorted(folder.glob("*.jsonl")))


def _build(out: Path, *args) -> object:
    return CliRunner().invoke(cli, ["build", "--out", str(out), *map(str, args)])


def test_build_writes_a_valid_artifact_and_a_rerun_comes_from_the_cache(tmp_path, loads, calls):
    args = ("--dataset", "nq-sample", "--llm", "smollm2-135m", "--limit", 3, "--k", 3,
            "--run", RUN, "--with-likelihood", "--max-new-tokens", 32, "--cache-dir", calls)
    before = _computed(calls)
    result = _build(tmp_path / "out", *args)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "utility" / "nq-sample" / "smollm2-135m" / "v1"
    assert f"smollm2-135m: {folder}" in result.output
    for row in ("known (closed-book correct)", "gold utilitarian passages / query",
                "RAG accuracy: gold utilitarian only", "RAG accuracy: human gold only"):
        assert row in result.output
    computed = _computed(calls)
    assert computed > before

    assert validate_path(folder) == []
    artifact = load_artifact(folder)  # also checks every sha256 against the manifest
    manifest, records = artifact.manifest, artifact.records
    assert [r["qid"] for r in records] == [f"nq-open-dev-oracle-{i}" for i in range(3)]
    _assert_manifest(manifest)

    for r in records:
        assert len(r["candidates"]) == 3
        assert r["known"] == has_answer(r["closed_book_answer"], r["answers"])
        for c in r["candidates"]:
            assert c["correct"] == has_answer(c["answer"], r["answers"])
            if c["utility"] == 1:
                assert c["correct"] and not r["known"]
        for setting in ("all", "utilitarian", "human_gold"):
            assert r["rag"][setting]["correct"] == has_answer(r["rag"][setting]["answer"],
                                                              r["answers"])
        assert r["utility_pids"] == [c["pid"] for c in r["candidates"] if c["utility"] == 1]
    first = records[0]["candidates"][0]  # the recorded likelihood is the model's own
    [expected] = loads[0].inner.loglikelihood([LoglikelihoodRequest(
        utility.passage_prompt(records[0]["question"], [Passage(first["pid"], first["title"],
                                                                first["text"])]),
        records[0]["answers"][0])])
    assert first["loglikelihood"] == pytest.approx(expected, abs=1e-4)
    assert any(r["utility_pids"] for r in records)  # SmolLM2 answers the Nobel question with its gold

    stats = manifest["stats"]
    assert stats["queries"] == 3
    assert stats["known_share"] == sum(r["known"] for r in records) / 3
    assert stats["mean_utilitarian"] == sum(len(r["utility_pids"]) for r in records) / 3
    flags = [[r["closed_book_capped"], *(c["capped"] for c in r["candidates"]),
              *(a["capped"] for a in r["rag"].values() if a is not None)] for r in records]
    assert stats["answers"] == sum(map(len, flags)) == 3 * (1 + 3 + 3)
    assert stats["capped_answers"] == sum(map(sum, flags))
    assert stats["capped_closed_book"] == sum(r["closed_book_capped"] for r in records)
    assert "answers cut at the new-token cap" in result.output
    _assert_card((folder / "README.md").read_text(), stats)

    again = _build(tmp_path / "out", *args)
    assert again.exit_code == 0, again.output
    assert _computed(calls) == computed  # every answer and likelihood from the cache
    assert _data(folder.parent / "v2") == _data(folder)


def _assert_manifest(manifest: dict) -> None:
    """The 3-query nq-sample build's manifest: model, source, prompts, pools, configs."""
    assert manifest["model_id"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert manifest["source_dataset"] == "nq-sample"
    assert {name: t["text"] for name, t in manifest["prompt_templates"].items()} == \
        utility.PROMPT_TEMPLATES
    assert manifest["sampling"]["answer"]["temperature"] == 0
    assert manifest["sampling"]["answer"]["max_tokens"] == 32
    run = {"name": RUN.name, "sha256": file_sha256(RUN)}  # the file, never its local path
    assert (manifest["pool"], manifest["k"], manifest["run"]) == ("rp", 3, run)
    assert manifest["config"] == {"dataset": "nq-sample", "corpus": None, "limit": 3, "pool": "rp",
                                  "k": 3, "run": run, "encoder": None, "index": None,
                                  "bm25_fields": None, "bm25_stemmer": None, "bm25_k1": None,
                                  "bm25_b": None, "answer_extractor": None, "qrels": None,
                                  "with_likelihood": True, "max_new_tokens": 32}
    assert manifest["corpus_passages"] == 4349
    assert manifest["llm_config"] == {"model": "SmolLM2-135M-Instruct.Q4_1.gguf",
                                      "backend": "hf", "batch_size": None, "device": None,
                                      "tensor_parallel": 1, "dtype": None}
    assert manifest["license"] == "cc-by-sa-3.0"  # nq-sample's own
    assert manifest["stats"]["candidates"] == 9


def _assert_card(card: str, stats: dict) -> None:
    """The card shows the build's statistics, setting and departures from the paper's."""
    assert "## Statistics of this build" in card
    assert f"| gold utilitarian passages per query (mean) | {stats['mean_utilitarian']:.2f} |" in card
    assert (f"| answers cut at the new-token cap | {stats['capped_answers']} of "
            f"{stats['answers']} |") in card
    assert "| candidate pool | `rp`, k = 3 (" in card
    assert "| answer cap | 32 new tokens per answer;" in card
    for departure in ("the queries are `nq-sample`", "only the first 3 queries",
                      "k = 3 retrieved passages per query, not 20",
                      (f"the retrieved passages come from the run file `{RUN.name} (sha256 "
                      f"{file_sha256(RUN)[:12]})`"),
                      "answers are capped at 32 new tokens, the paper's code at 4,096"):
        assert f"- {departure}" in card, departure


def test_the_data_does_not_depend_on_the_shard_size(tmp_path, loads, calls):
    args = ("--dataset", "nq-sample", "--llm", "smollm2-135m", "--limit", 3, "--k", 3,
            "--run", RUN, "--max-new-tokens", 32, "--cache-dir", calls)
    folders = []
    for size in (1, 2, 256):
        out = tmp_path / f"out-{size}"
        result = _build(out, *args, "--shard-size", size)
        assert result.exit_code == 0, result.output
        folders.append(out / "utility" / "nq-sample" / "smollm2-135m" / "v1")
    assert [len(list(f.glob("*.jsonl"))) for f in folders] == [3, 2, 1]
    assert _data(folders[0]) == _data(folders[1]) == _data(folders[2])
    assert validate_path(folders[0]) == []


def test_the_first_queries_get_the_same_pools_whatever_the_limit(tmp_path, loads, calls):
    # dense retrieval with the bundled MiniLM over a small corpus file (nq-sample's first 10
    # gold chunks and every 60th other passage, 83 passages: seconds to encode, not minutes)
    subset = nq_subset(10).corpus
    corpus = write_corpus(subset, tmp_path / "corpus.jsonl")
    pools, manifests = {}, {}
    for limit in (5, 10):
        out = tmp_path / f"out-{limit}"
        result = _build(out, "--dataset", "nq-sample", "--llm", "smollm2-135m", "--limit", limit,
                        "--k", 2, "--corpus", corpus, "--encoder", "minilm",
                        "--max-new-tokens", 8, "--cache-dir", calls)
        assert result.exit_code == 0, result.output
        artifact = load_artifact(out / "utility" / "nq-sample" / "smollm2-135m" / "v1")
        pools[limit] = {r["qid"]: [(c["pid"], c["rank"], c["gold"]) for c in r["candidates"]]
                        for r in artifact.records}
        manifests[limit] = artifact.manifest
    assert len(pools[10]) == 10
    assert pools[5] == {qid: pools[10][qid] for qid in pools[5]}
    assert manifests[5]["corpus_passages"] == manifests[10]["corpus_passages"] == len(subset)
    assert manifests[5]["corpus_gold"] == {"gold": 5, "in_corpus": 5, "queries_with_gold": 5,
                                           "queries_with_gold_in_corpus": 5, "title_only": 0}
    assert manifests[5]["corpus_source"] is None  # a file, not a named corpus
    assert manifests[5]["encoder"]["index"] == {"kind": "flat"}  # exact search, the default
    folder = tmp_path / "out-5" / "utility" / "nq-sample" / "smollm2-135m" / "v1"
    assert "mean pooling), searched exactly (flat index) |" in (folder / "README.md").read_text()
    # the corpus file as its name and sha256: no local path in what `labeler push` publishes
    assert manifests[5]["config"]["corpus"] == {"name": "corpus.jsonl",
                                                "sha256": file_sha256(corpus)}
    assert f"`corpus.jsonl (sha256 {file_sha256(corpus)[:12]})` ({len(subset)} passages)" in (
        folder / "README.md").read_text()
    for published in folder.iterdir():
        assert str(tmp_path) not in published.read_text(), published.name


def _bad_run(tmp_path: Path) -> Path:
    path = tmp_path / "bad.trec"
    path.write_text("nq-open-dev-oracle-0 Q0 nq-oracle:64aaafc597c5 1 0.7 x\n"
                    "nq-open-dev-oracle-0 Q0 no-such-passage 2 0.5 x\n")
    return path


@pytest.mark.parametrize("case", ["missing corpus file", "no corpus",
                                  "run with unknown pid", "unloadable llm", "same llm twice",
                                  "existing version", "unloadable encoder"])
def test_bad_input_fails_before_any_model_is_loaded_and_leaves_no_artifact(tmp_path, no_loads,
                                                                            case):
    out = tmp_path / "out"
    base = ["--llm", "smollm2-135m", "--limit", 3, "--k", 3]
    missing = tmp_path / "missing.jsonl"
    gguf = tmp_path / "nowhere" / "model.gguf"
    twin = tmp_path / "smollm2-135m"
    twin.mkdir()
    args, error, line = {
        "missing corpus file": (
            ["--dataset", f"jsonl:{NQ_JSONL}", "--corpus", missing, *base], InputError,
            f"{missing}: no such file"),
        "no corpus": (
            ["--dataset", f"jsonl:{NQ_JSONL}", *base], InputError,
            f"field 'corpus': dataset 'jsonl:{NQ_JSONL}' has no passage corpus to retrieve from"),
        "run with unknown pid": (
            ["--dataset", "nq-sample", "--run", _bad_run(tmp_path), *base], InputError,
            (f"{tmp_path / 'bad.trec'}:2 field 'pid': unknown passage 'no-such-passage' "
             "(not in the corpus)")),
        "unloadable llm": (
            ["--dataset", "nq-sample", "--run", RUN, *base, "--llm", gguf], ModelLoadError,
            f"cannot load model '{gguf}': no such file or folder"),
        "same llm twice": (  # a local folder named as the alias: the same artifact folder
            ["--dataset", "nq-sample", "--run", RUN, *base, "--llm", twin], InputError,
            (f"field 'llm': --llm 'smollm2-135m' and --llm '{twin}' are both "
             "'smollm2-135m': their artifacts would share one folder (name each model once)")),
        "existing version": (
            ["--dataset", "nq-sample", "--run", RUN, "--version", "1", *base], ArtifactError,
            (f"{out / 'utility' / 'nq-sample' / 'smollm2-135m' / 'v1'}: this version exists "
             "already")),
        "unloadable encoder": (  # asked for by name: no fallback to the bundled minilm
            ["--dataset", "nq-sample", "--encoder", "bge-m3", *base], ModelLoadError,
            "cannot load model 'BAAI/bge-m3': not in the local Hugging Face cache"),
    }[case]
    if case == "existing version":
        (out / "utility" / "nq-sample" / "smollm2-135m" / "v1").mkdir(parents=True)
    before = sorted(out.rglob("*")) if out.exists() else []

    result = _build(out, *args)

    assert result.exit_code == 1
    assert isinstance(result.exception, error)
    assert result.exception.line().startswith(line)
    assert "\n" not in result.exception.line()
    assert no_loads == []  # no model was loaded: every check runs first
    assert _computed(tmp_path / "labeler-cache") == 0
    assert (sorted(out.rglob("*")) if out.exists() else []) == before  # nothing written


def test_unknown_artifact_is_refused_before_loading_anything(tmp_path, no_loads):
    result = _build(tmp_path / "out", "--dataset", "nq-sample", "--llm", "smollm2-135m",
                    "--artifact", "utilty")
    assert result.exit_code == 2  # a usage error: --artifact is a choice of the tasks
    assert "Invalid value for '--artifact': 'utilty' is not one of 'utility', 'seer', " \
        "'rubric'" in result.output
    assert no_loads == [] and not (tmp_path / "out").exists()


def test_manifest_records_how_the_pools_were_made_and_the_default_cap(tmp_path, loads, calls):
    """--pool hgp labels the human gold passages alone: no retrieval, no encoder. Without
    --max-new-tokens answers run to 256 new tokens."""
    result = _build(tmp_path / "out", "--dataset", "nq-sample", "--llm", "smollm2-135m",
                    "--limit", 2, "--pool", "hgp", "--cache-dir", calls)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "utility" / "nq-sample" / "smollm2-135m" / "v1"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["pool"], manifest["encoder"], manifest["run"]) == ("hgp", None, None)
    assert manifest["config"]["max_new_tokens"] == 256
    assert manifest["sampling"]["answer"]["max_tokens"] == 256
    records = load_artifact(folder).records
    assert len(records) == 2
    assert all([c["source"] for c in r["candidates"]] == ["human"] for r in records)
    assert manifest["stats"]["human_gold_in_pool"] == 2
    assert manifest["stats"]["capped_answers"] == sum(
        [r["closed_book_capped"], r["candidates"][0]["capped"],
         *(a["capped"] for a in r["rag"].values())].count(True) for r in records)
    card = (folder / "README.md").read_text()
    assert "| corpus | none searched (pool `hgp`) |" in card
    assert "| encoder | none (no retrieval) |" in card
    assert "- answers are capped at 256 new tokens, the paper's code at 4,096 (" in card


def test_a_build_killed_in_its_third_shard_resumes_to_the_same_data(tmp_path, loads,
                                                                    session_cache):
    """SIGKILL once two shards of 4 are written, while shard 3 is being labelled; the rerun
    writes only the missing shards and computes no call twice. (A shard asks all its calls in
    one cache chunk, so a kill between two of its calls cannot be timed here: test_cache's
    killed run covers the calls a killed chunk loop had committed.)"""
    cache = tmp_path / "calls"
    cache.mkdir()
    (cache / "models").symlink_to(Path(session_cache) / "models")  # the converted SmolLM2
    out = tmp_path / "out"
    args = ["build", "--dataset", "nq-sample", "--llm", "smollm2-135m", "--limit", "4",
            "--pool", "hgp", "--shard-size", "1", "--max-new-tokens", "32",
            "--cache-dir", str(cache), "--out", str(out)]
    job = [sys.executable, "-m", "labeler", *args]
    llm_dir = out / "utility" / "nq-sample" / "smollm2-135m"

    killed = kill_when(job, lambda: len(list(llm_dir.glob(".v1.*.partial/data-*.jsonl"))) >= 2,
                       "the build")
    [partial] = llm_dir.glob(".v1.*.partial")
    assert sorted(p.name for p in partial.glob("data-*.jsonl")) == [
        "data-00000.jsonl", "data-00001.jsonl"]
    assert not (llm_dir / "v1").exists()
    shown = partial.relative_to(out).as_posix()
    assert validate_path(out) == [  # the parent's check names the abandoned folder
        (f"{shown}: an unfinished build whose writer is gone (its writer, process {killed}, "
        "has ended): rerun its command to resume it, or delete the folder")]

    rerun = subprocess.run(job, capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert not [p for p in (llm_dir / "v1").iterdir() if p.name.startswith(".")]
    said = " ".join(rerun.stderr.split())  # rich wraps lines at the terminal width
    assert "resuming" in said and "2 of 4 shards already written" in said
    stats = cache_stats(cache)
    assert stats.misses == stats.entries == 8  # 4 queries x (closed-book, one passage): once each

    whole = tmp_path / "whole"  # the same build, uninterrupted (its calls are all cached now)
    result = _build(whole, *args[1:-4], "--cache-dir", cache)
    assert result.exit_code == 0, result.output
    assert _data(llm_dir / "v1") == _data(whole / "utility" / "nq-sample" / "smollm2-135m" / "v1")
    assert validate_path(llm_dir / "v1") == []


#: imported only to load a model: none may be in sys.modules after a build that fails its checks
#: (the backend modules themselves are cheap: their classes' declarations are read to check the
#: options, and each imports its model library when a model loads)
MODEL_MODULES = ("torch", "transformers", "vllm", "FlagEmbedding")


def test_the_headline_offline_with_an_empty_cache_fails_in_one_line_before_any_model(tmp_path):
    """`labeler build --dataset nq --llm llama3.1-8b` as a new user types it, offline, with an
    empty Hugging Face and labeler cache: one error line, exit 1, no model module imported,
    nothing downloaded or written."""
    report = tmp_path / "loaded.json"
    code = ("import atexit, json, sys\n"
            f"atexit.register(lambda: open({str(report)!r}, 'w').write(json.dumps(\n"
            f"    [m for m in {MODEL_MODULES!r} if m in sys.modules])))\n"
            "from labeler.cli import main\n"
            "main()\n")
    home, cache, out = tmp_path / "hf-home", tmp_path / "labeler-cache", tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(home),
           "HF_DATASETS_CACHE": str(home / "datasets"), "LABELER_CACHE_DIR": str(cache)}
    run = subprocess.run([sys.executable, "-c", code, "build", "--dataset", "nq", "--llm",
                          "llama3.1-8b", "--out", str(out)], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 1
    [line] = run.stderr.splitlines()
    assert line.startswith("error: ")
    assert json.loads(report.read_text()) == []
    assert not out.exists()
    assert not list(home.glob("hub/models--*")) and not (cache / "models").exists()
