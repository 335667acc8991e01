"""`labeler score` imports only what scoring needs: a guard on its import chain, read from the
modules a real `labeler score` process holds when it ends (not a timing test).

Whole-process start-up is what made the scorer slower than a pytrec_eval script: each module
here costs tens of milliseconds to seconds to import and no ranking or selection needs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
ARTIFACT = FIXTURES / "utility-v1"

#: never imported by scoring a ranking or a selection (top-level package names)
HEAVY = ("torch", "transformers", "datasets", "huggingface_hub", "scipy", "sklearn", "pandas",
         "polars", "pyarrow", "FlagEmbedding", "sentence_transformers", "faiss", "vllm", "ray",
         "bm25s", "jinja2", "yaml", "requests", "jsonlines", "regex", "matplotlib")

#: runs `labeler` with argv[2:] as its arguments, then writes the names of every module it
#: imported to the file argv[1] (also when the command fails)
RUN = """\
import json, sys
out = sys.argv.pop(1)
sys.argv[0] = "labeler"
from labeler.cli import main
try:
    main()
finally:
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def imported(tmp_path: Path, *args: str) -> set[str]:
    """The top-level packages a `labeler` process with `args` imported."""
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", RUN, str(out), *args], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    return {name.split(".")[0] for name in json.loads(out.read_text())}


RECORDS = [json.loads(line) for line in (ARTIFACT / "data-00000.jsonl").open()]


@pytest.fixture
def ranking(tmp_path) -> Path:
    """A ranking of the artifact's candidates, in their pool order."""
    return write(tmp_path / "ranking.jsonl", [
        json.dumps({"qid": r["qid"], "ranking": [c["pid"] for c in r["candidates"]]})
        for r in RECORDS])


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_ranking_as_json_against_a_data_file_imports_nothing_heavy(tmp_path, ranking):
    # the artifact's records alone, outside their version folder: no manifest to check
    data = write(tmp_path / "data.jsonl", [json.dumps(r) for r in RECORDS])
    modules = imported(tmp_path, "score", str(ranking), "--against", str(data), "--json")
    assert modules.isdisjoint(HEAVY), sorted(modules & set(HEAVY))
    # nothing is drawn and no manifest is checked: no rich, no jsonschema either
    assert modules.isdisjoint({"rich", "jsonschema"}), sorted(modules & {"rich", "jsonschema"})
    assert "numpy" in modules  # the metrics' own arrays: the guard reads the real import chain


def test_tables_against_a_version_folder_its_data_file_and_qrels_import_nothing_heavy(
        tmp_path, ranking):
    # a version folder's manifest is checked against its compiled schema (jsonschema only
    # names the problems of an invalid one); the table is drawn by rich
    modules = imported(tmp_path, "score", str(ranking), "--against", str(ARTIFACT))
    assert modules.isdisjoint(HEAVY), sorted(modules & set(HEAVY))
    assert "rich" in modules and "jsonschema" not in modules
    qrels = write(tmp_path / "utility.qrels", [f"{r['qid']} 0 {c['pid']} {c['utility']}"
                                               for r in RECORDS for c in r["candidates"]])
    selection = write(tmp_path / "selection.jsonl", [
        json.dumps({"qid": r["qid"], "selected": r["utility_pids"]}) for r in RECORDS])
    for args in (
        (str(FIXTURES / "nq_sample_minilm_top4.trec"), "--against",
         str(ARTIFACT / "data-00000.jsonl")),
        (str(ranking), "--against", str(qrels)),
        (str(selection), "--against", str(ARTIFACT)),
    ):
        modules = imported(tmp_path, "score", *args)
        assert modules.isdisjoint(HEAVY), (args, sorted(modules & set(HEAVY)))


def test_importing_the_score_command_imports_nothing_heavy():
    code = "import sys, labeler.cli.score; print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    modules = {name.split(".")[0] for name in done.stdout.split()}
    unwanted = {*HEAVY, "rich", "jsonschema"}
    assert modules.isdisjoint(unwanted), sorted(modules & unwanted)
