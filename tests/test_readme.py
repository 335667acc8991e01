"""Every command of the fenced bash blocks of README.md and docs/*.md, run as written on the
bundled data.

Each command is either run (in RUN, in an order where one command's output feeds the next:
one build, then validate, score and push it to the tests' Hub server) or listed in SKIPPED
with why, so a command added to README.md or a docs/ page fails
`test_every_readme_command_is_run_or_listed` until it is covered. A command on several pages
is run once. A run command changes only what it must: options appended (click takes
the last of a repeated option: tiny limits, and a real subset of nq-sample's corpus where
MiniLM retrieves from it: DENSE) and names replaced (a model or artifact that needs the
network); the input files it names are made from the bundled data (`_inputs`).
"""

from __future__ import annotations

import gzip
import json
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hub.conftest import hub  # noqa: F401  (the tests' Hub server fixture)
from support.corpora import nq_subset, write_corpus

from labeler.cli import cli

ROOT = Path(__file__).parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
CISI = ROOT / "labeler" / "data" / "cisi_sample"
V1 = "out/utility/nq-sample/smollm2-135m/v1"
SEER = "out/seer/nq-sample/smollm2-135m/v1"
TINY = ("--limit", "2")
#: where a command retrieves from nq-sample with MiniLM: TINY and a real subset of its corpus
#: (`_inputs`: the first 10 questions' gold chunks and every 60th other passage, 83), since
#: encoding all 4,349 passages takes minutes on 2 CPU cores
DENSE = (*TINY, "--corpus", "nq-corpus.jsonl")
#: the SEER build: DENSE and its passages and extractions cut as tests/support/seer2.py's
#: (SEER's 5 passages x 4 samples of up to 256 tokens took 113 s of CPU of the 320 of all)
SEER_TINY = (*DENSE, "--k", "2", "--max-new-tokens", "40")

#: a page's command -> why it is not run here
SKIPPED = {
    **dict.fromkeys([
        "pip install ./labeler-reads", "labeler plugins", "python -m pytest labeler-reads/tests",
        ("labeler build --artifact reads --dataset nq-sample --llm smollm2-135m --limit 2 "
         "--pool hgp"),
        "labeler validate out/reads/nq-sample/smollm2-135m/v1",
        "labeler score my_selection.jsonl --against out/reads/nq-sample/smollm2-135m/v1"],
        "docs/plugins.md's package: tests/test_plugin_guide.py writes it from the page, installs "
        "it into a folder of its own and runs these"),
    "labeler build --artifact lexical --dataset nq-sample --limit 2 --pool hgp":
        "the fixture plugin's method: tests/tasks/test_plugins.py installs it and builds it with "
        "no --llm",
    **dict.fromkeys(["python -m pip install build twine", "python -m build labeler-reads",
                     "python -m twine upload labeler-reads/dist/*"],
                    "publishes to PyPI (network, an account)"),
    "make test": "runs the whole suite",
    "make test-vllm": "vllm",
    "make demo": "the first command of `labeler build` below, with --limit 10",
    "make install": "installs packages: what `make test` runs first",
    ". .venv/bin/activate": "the tests run with this environment's Python",
    "make install-vllm": "vllm",
    "pip install -e '.[ray]'": "installs a package",
    "export HF_TOKEN=...": "the tests' Hub server fixture sets HF_TOKEN",
    "labeler build --dataset nq --llm llama3.1-8b":
        "network (KILT NQ, kilt-w100, Llama 3.1): tests/hub/test_headline.py runs it as written "
        "against the tests' Hub mirror",
    "labeler build --dataset nq --llm llama3.1-8b --dry-run":
        "network (KILT NQ, Llama 3.1's licence check): tests/workflows/test_plan.py",
    "labeler build --dataset nq --llm llama3.1-8b --llm qwen3-8b --backend vllm --pool mcp":
        "vllm, GPU",
    "labeler build --dataset nq --corpus wiki-dpr --llm qwen3-8b --backend vllm": "vllm, GPU",
    "labeler build --dataset msmarco-fqa --answer-extractor qwen3-32b --llm qwen3-8b "
    "--backend vllm": "vllm, GPU",
    "labeler build --dataset nq-sample --llm smollm2-135m --limit 8 --shard-size 2 --executor "
    "ray --workers 2": "starts Ray: tests/executors/test_ray.py builds nq-sample on a real "
                       "local Ray cluster",
    "labeler build --dataset nq --llm llama3.1-8b --backend vllm --executor ray --ray-address "
    "HEAD:6379 --tensor-parallel 2 --cache-dir /shared/labeler-cache": "a Ray cluster, vllm, GPU",
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --served-model-name llama3.1-8b "
    "--tensor-parallel-size 8 --api-key \"$OPENAI_API_KEY\"": "vllm, GPUs",
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --served-model-name llama3.1-8b "
    "--tensor-parallel-size 4 --data-parallel-size 2 --api-key \"$OPENAI_API_KEY\"":
        "vllm, GPUs",
    "labeler build --dataset nq --llm llama3.1-8b --backend openai --base-url "
    "http://gpu-node:8000/v1 --dry-run": "network (KILT NQ, Llama 3.1's licence check): "
                                         "tests/workflows/test_plan.py plans a served build",
    "labeler build --dataset nq --llm llama3.1-8b --backend openai --base-url "
    "http://gpu-node:8000/v1 --prompt-format text": "a vLLM server on GPUs: "
                                                    "tests/llm/test_openai_api.py builds "
                                                    "nq-sample against a real vllm serve",
    "VLLM_CPU_KVCACHE_SPACE=1 python -m vllm.entrypoints.openai.api_server --model "
    "~/.cache/labeler/models/smollm2-135m-b179c9523d0e6a0f --served-model-name smollm2-135m "
    "--dtype float32 --enforce-eager --max-model-len 8192 --port 8000 --api-key "
    "\"$OPENAI_API_KEY\"": "a server: tests/conftest.py's vllm_server starts it so "
                            "(tests/support/served.py)",
    "transformers serve ~/.cache/labeler/models/smollm2-135m-b179c9523d0e6a0f --host "
    "127.0.0.1 --port 8000 --device cpu --dtype float32": "a server: tests/conftest.py's "
                                                          "transformers_server starts it so",
    "labeler build --dataset nq-sample --llm smollm2-135m --backend openai --base-url "
    "http://127.0.0.1:8000/v1 --served-model "
    "~/.cache/labeler/models/smollm2-135m-b179c9523d0e6a0f --limit 2":
        "needs the server above: tests/llm/test_served_servers.py builds through it",
    "export OPENAI_API_KEY=sk-...": "the served tests set their server's key",
    "labeler build --artifact rubric --dataset cisi-sample --llm openai/gpt-4o-mini "
    "--served-model gpt-4o-mini --backend openai --base-url https://api.openai.com/v1 "
    "--concurrency 8 --max-rps 5 --max-tpm 200000 --price-in 0.15 --price-out 0.6 --limit 10":
        "a hosted API (network, a key): tests/llm/test_served_servers.py builds through a "
        "proxy shaped as one",
    "labeler score judged/nq/lvr.jsonl judged/tq/lvr.jsonl --rag --against "
    "out/utility/nq/llama3.1-8b/v1 --baseline judged/nq/retrieval.jsonl --against "
    "out/utility/tq/llama3.1-8b/v1 --baseline judged/tq/retrieval.jsonl":
        "network (Llama 3.1's artifacts of KILT NQ and TriviaQA): tests/scoring/test_overall.py "
        "scores several datasets' submissions with --rag",
    "labeler compare out/utility/nq-sample/smollm2-135m/v1 out/utility/nq-sample/qwen3-8b/v1":
        "network (Qwen3-8B): tests/workflows/test_compare.py compares SmolLM2's artifact with "
        "a second reader's",
    "labeler reproduce utility-paper --dry-run":
        "network (the paper's datasets and LLMs): tests/workflows/reproduce/test_utility_plan.py",
    "labeler reproduce utility-paper --backend vllm": "vllm, GPU",
    "labeler reproduce rubric-experiment --dry-run":
        "tests/workflows/reproduce/test_rubric_experiment.py runs this dry run (and the "
        "whole command on the tests' mirror of WANDS)",
    "labeler reproduce rubric-experiment --llm qwen3-8b --backend vllm --queries 100":
        "vllm, GPU, network",
    "labeler reproduce utility-paper --dataset nq --llm qwen3-8b --limit 500":
        "network (KILT NQ, Qwen3-8B)",
    "labeler reproduce seer-paper --dry-run":
        "network (AlignScore's checkpoint, the SEER splits): tests/workflows/reproduce/"
        "test_seer_paper.py runs a dry run and the one-line AlignScore failure offline",
    "labeler reproduce seer-paper --dataset nq --backend vllm --limit 1000 --train-limit 5000":
        "vllm, GPU, network",
    "labeler reproduce seer-paper --dataset nq-sample --llm smollm2-135m --faithfulness llm "
    "--limit 10 --train-limit 10 --samples 4 --steps 2 --encoder minilm":
        "minutes of training and answers: tests/workflows/reproduce/test_seer_paper.py runs it "
        "on two queries and one step, against the separate commands",
    "labeler build --artifact rubric --dataset wands --llm qwen3-8b --limit 50":
        "network (WANDS from GitHub, Qwen3-8B): tests/tasks/test_rubric_wands.py builds wands "
        "with SmolLM2 from the tests' mirror of its GitHub files",
    "labeler build --artifact rubric --dataset esci --llm qwen3-8b --limit 50":
        "network (ESCI from GitHub, Qwen3-8B): tests/sources/test_hub_mirror.py loads esci from "
        "the tests' mirror of its GitHub files",
    "labeler view out/utility/nq-sample/smollm2-135m/v1 out/utility/nq-sample/qwen3-8b/v1":
        "serves until stopped, and network (Qwen3-8B): tests/view/test_cli.py runs it, "
        "tests/view/test_browser.py drives its page in Chromium",
    "labeler view out/utility/nq-sample/smollm2-135m/v1":
        "serves until stopped: tests/view/test_cli.py runs it, keeps a verdict and stops it",
    "labeler view out/utility/nq-sample/smollm2-135m/v1 --submission my-selection.jsonl":
        "serves until stopped: tests/view/test_server.py scores a submission on its page, "
        "tests/view/test_browser.py drives that page in Chromium",
    "labeler merge-reviews out/review/nq-sample/smollm2-135m/v1 "
    "../bob/review/nq-sample/smollm2-135m/v1":
        "needs two reviewers' review versions: tests/view/test_verdicts.py merges two",
    "labeler train-extractor out/seer/nq-sample/smollm2-135m/v1 --out seer-extractor":
        "TRL (the `train` extra): tests/train/test_extractor.py trains on a seer artifact",
    "labeler build --artifact seer --dataset nq-sample --llm smollm2-135m --extractor "
    "seer-extractor --limit 10 --samples 4 --encoder minilm":
        "the extractor train-extractor writes: tests/train/test_extractor.py builds with it",
}

#: (folder, a page's command, options appended, {its text: replacement}), run in this order
RUN = [
    ("nq", ("labeler build --dataset nq-sample --llm smollm2-135m --limit 10 --k 5 --encoder "
           "minilm"), DENSE, {}),
    ("nq", "labeler build --dataset jsonl:my_qa.jsonl --corpus my_corpus.jsonl --llm qwen3-8b",
     (*TINY, "--k", "3"), {"qwen3-8b": "smollm2-135m"}),
    ("nq", ("labeler build --dataset nq-sample --run my_run.trec --llm smollm2-135m "
           "--with-likelihood"), TINY, {}),
    ("nq", "labeler retrieve --dataset nq-sample --k 20 --encoder minilm --out nq-sample.trec",
     DENSE, {}),
    ("nq", ("labeler retrieve --dataset nq-sample --encoder minilm --index hnsw:efSearch=64 "
           "--out hnsw.trec"), DENSE, {}),
    ("nq", "labeler models", (), {}),
    ("nq", "labeler cache stats", (), {}),
    ("nq", f"labeler validate {V1}", (), {}),
    ("nq", "labeler validate my_records.jsonl --schema utility", (), {}),
    ("nq", f"labeler score my_selection.jsonl --against {V1}", (), {}),
    ("nq", ("labeler judge --dataset nq-sample --llm smollm2-135m --method lvs --limit 10 --k 5 "
           "--encoder minilm --out judged/lvs.jsonl"), DENSE, {}),
    ("nq", f"labeler score judged/lvs.jsonl --against {V1} --rag", (), {}),
    ("nq", ("labeler build --artifact seer --dataset nq-sample --llm smollm2-135m --limit 10 "
           "--samples 4 --encoder minilm"), SEER_TINY, {}),
    ("nq", f"labeler score evidence.jsonl --against {SEER} --llm smollm2-135m", (), {}),
    ("nq", f"labeler score evidence.jsonl --against {SEER} --rag", (), {}),
    ("nq", "labeler push --repo my-org/llm-utility --dry-run", (), {}),
    ("nq", "labeler push --repo my-org/llm-utility", (), {}),
    ("nq", ("labeler pull my-org/llm-utility --config utility.nq-sample.smollm2-135m --revision "
           "utility.nq-sample.smollm2-135m.v1 --out pulled/"), (), {}),
    ("nq", ("labeler score evidence.jsonl --against hub:my-org/llm-utility:utility.nq.llama3.1-8b "
           "--llm smollm2-135m"), (), {"utility.nq.llama3.1-8b": "utility.nq-sample.smollm2-135m"}),
    ("cisi", ("labeler build --artifact rubric --dataset cisi-sample --llm smollm2-135m --limit 5 "
             "--k 20 --direct"), (*TINY, "--rerank-k", "5"), {}),
    ("cisi", ("labeler build --artifact rubric --dataset search:queries.tsv --corpus corpus.jsonl "
             "--qrels qrels.txt --llm qwen3-8b --backend vllm"), (*TINY, "--rerank-k", "5"),
     {"qwen3-8b --backend vllm": "smollm2-135m"}),
    ("cisi", ("labeler score out/rubric/cisi-sample/smollm2-135m/v1/fused.trec --against qrels.txt "
             "--k 10"), (), {}),
    ("cisi", "labeler score my_run.trec --against qrels.txt --k 5 --k 10 --baseline bm25.trec",
     (), {}),
    ("cisi", ("labeler build --artifact rubric --dataset cisi-sample --llm smollm2-135m --limit 5 "
             "--threshold 0.7 --json"), (*TINY, "--rerank-k", "5"), {}),
    ("cisi", ("labeler build --artifact rubric --dataset cisi-sample --llm smollm2-135m "
             "--bm25-stemmer english --bm25-k1 0.9"), (*TINY, "--rerank-k", "5"), {}),
]


#: the pages whose commands are run or listed: the README and the manual under docs/
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def readme_commands() -> list[str]:
    """Each command of the ```bash blocks of README.md and docs/*.md: continuations joined,
    comments dropped, spaces collapsed."""
    return [command for page in PAGES for command in page_commands(page)]


def page_commands(page: Path) -> list[str]:
    """Each command of one page's ```bash blocks."""
    commands, block = [], None
    for line in page.read_text(encoding="utf-8").splitlines():
        if block is None:
            block = [] if line.strip() == "```bash" else None
        elif line.strip() == "```":
            text = "\n".join(block).replace("\\\n", " ")
            commands += [" ".join(line.split("#")[0].split()) for line in text.splitlines()]
            block = None
        else:
            block.append(line)
    return [command for command in commands if command]


def test_every_readme_command_is_run_or_listed():
    listed = [command for _, command, _, _ in RUN] + list(SKIPPED)
    assert len(listed) == len(set(listed))
    assert sorted(set(readme_commands())) == sorted(listed)


def test_the_readme_commands_run_as_written(tmp_path, monkeypatch, hub, loads):  # noqa: F811
    monkeypatch.setenv("LABELER_CACHE_DIR", str(tmp_path / "cache"))
    folders = {name: tmp_path / name for name in ("nq", "cisi")}
    for folder in folders.values():
        folder.mkdir()
    _inputs(folders["cisi"], before=True)
    for name, command, appended, replaced in RUN:
        for old, new in replaced.items():
            assert old in command
            command = command.replace(old, new)
        args = [*shlex.split(command)[1:], *appended]
        _inputs(folders[name], before=False)
        monkeypatch.chdir(folders[name])
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, f"{command}\n{result.output}"
    rubric = sorted((folders["cisi"] / "out" / "rubric").glob("*/smollm2-135m/v1"))
    assert len(rubric) == 2  # cisi-sample's and the search: files' (issue 25, item 8)
    # the card's NDCG@10 and `labeler score` of the same --limit artifact count its 2 queries
    folder = folders["cisi"] / "out" / "rubric" / "cisi-sample" / "smollm2-135m" / "v1"
    card = json.loads((folder / "manifest.json").read_text())["stats"]
    scored = CliRunner().invoke(cli, ["score", str(folder / "fused.trec"), "--against",
                                      "qrels.txt", "--k", "10", "--json"])
    report = json.loads(scored.stdout)
    assert report["counts"]["queries"] == 2
    assert report["metrics"]["ndcg@10"] == pytest.approx(card["ndcg@10_fused"], abs=1e-12)


def _inputs(folder: Path, *, before: bool) -> None:
    """The files the pages' commands name, made from the bundled data once what they are
    made of exists: NQ questions and passages (tests/fixtures), DENSE's subset of nq-sample's
    corpus, the MiniLM top 3 of nq-sample's first two queries, the first build's records, a
    selection of each query's first candidate, the seer build's rank-1 extractions as
    evidence; CISI's queries, documents and qrels, and the rubric build's BM25 and fused
    runs."""
    made = lambda name: (folder / name).exists()
    if folder.name == "cisi":
        if before:
            with (CISI / "queries.jsonl").open() as f:
                queries = [json.loads(line) for line in f]
            (folder / "queries.tsv").write_text("".join(f"{q['qid']}\t{q['text']}\n"
                                                        for q in queries))
            with gzip.open(CISI / "corpus.jsonl.gz") as f:
                (folder / "corpus.jsonl").write_bytes(f.read())
            shutil.copy(CISI / "qrels.txt", folder / "qrels.txt")
        fused = folder / "out" / "rubric" / "cisi-sample" / "smollm2-135m" / "v1" / "fused.trec"
        if fused.exists() and not made("my_run.trec"):
            shutil.copy(fused, folder / "my_run.trec")
            lines = []
            for path in sorted(fused.parent.glob("candidates-*.jsonl")):
                with path.open() as f:
                    for record in map(json.loads, f):
                        lines.append(f"{record['qid']} Q0 {record['pid']} 0 "
                                     f"{record['bm25']} bm25\n")
            (folder / "bm25.trec").write_text("".join(lines))
        return
    if not made("my_qa.jsonl"):
        write_corpus(nq_subset(10).corpus, folder / "nq-corpus.jsonl")
        shutil.copy(FIXTURES / "flashrag_nq_test.jsonl", folder / "my_qa.jsonl")
        shutil.copy(FIXTURES / "flashrag_corpus.jsonl", folder / "my_corpus.jsonl")
        lines = (FIXTURES / "nq_sample_minilm_top3.trec").read_text().splitlines(keepends=True)
        two = list(dict.fromkeys(line.split()[0] for line in lines))[:2]
        (folder / "my_run.trec").write_text("".join(line for line in lines
                                                    if line.split()[0] in two))
    data = folder / V1 / "data-00000.jsonl"
    if data.exists() and not made("my_records.jsonl"):
        shutil.copy(data, folder / "my_records.jsonl")
        with data.open() as f:
            records = [json.loads(line) for line in f]
        (folder / "my_selection.jsonl").write_text("".join(
            json.dumps({"qid": r["qid"], "selected": [r["candidates"][0]["pid"]]}) + "\n"
            for r in records))
    seer = folder / SEER / "data-00000.jsonl"
    if seer.exists() and not made("evidence.jsonl"):
        with seer.open() as f:
            records = [json.loads(line) for line in f]
        (folder / "evidence.jsonl").write_text("".join(
            json.dumps({"qid": r["qid"], "evidence": r["extractions"][0]["text"]}) + "\n"
            for r in records if r.get("extractions")))


def readme_python_api() -> str:
    """The first ```python block of docs/python-api.md."""
    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    return page.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_python_api_runs_as_written(tmp_path, monkeypatch, capsys, smollm):
    from datasets import Dataset

    from labeler.artifacts import load_artifact

    code = readme_python_api()
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    monkeypatch.chdir(tmp_path)
    names: dict = {}

    exec(compile(code, "docs/python-api.md", "exec"), names)  # noqa: S102

    built, ds = names["built"], names["ds"]
    assert (tmp_path / built.path).resolve() == (
        tmp_path / "out" / "utility" / "nq-sample" / "smollm2-135m" / "v1").resolve()
    assert isinstance(ds, Dataset)
    assert ds.to_list() == load_artifact(built.path).records  # the records, as written
    assert "precision" in capsys.readouterr().out  # the selection's scores
