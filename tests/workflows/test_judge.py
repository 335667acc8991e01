"""`labeler judge` -> `labeler score` end to end with the real bundled SmolLM2 on nq-sample.

Two queries, the real top-3 of tests/fixtures/nq_sample_minilm_top3.trec (MiniLM over
nq-sample's corpus; the run saves re-encoding the corpus), answers capped at 32 new tokens.
One module-wide call cache: the utility artifact is built once, and every judge and score
asks through it (the pseudo-answers are the artifact's all-passage answers, served from it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.nq2 import NQ2_OPTIONS, copy_nq2_build

from labeler.artifacts import load_artifact
from labeler.cli import cli
from labeler.errors import InputError
from labeler.judges.methods import METHODS
from labeler.llm.call_store import cache_stats
from labeler.schemas import check
from labeler.scoring.submissions import read_submission

POOLS = NQ2_OPTIONS


@pytest.fixture(scope="module")
def setup(tmp_path_factory, nq2_build):
    """(folder, the run cut to two queries, the call cache, the utility artifact)."""
    root = tmp_path_factory.mktemp("judge")
    return root, *copy_nq2_build(nq2_build, root)


def _cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _judge(setup, method: str, *extra: str) -> Path:
    root, run, calls, _ = setup
    out = root / f"{method}{''.join(extra).replace('--', '-')}.jsonl"
    result = _cli("judge", "--llm", "smollm2-135m", "--method", method, *extra, *POOLS,
                  "--run", run, "--cache-dir", calls, "--out", out)
    assert result.exit_code == 0, result.output
    assert f"{method}" in result.stdout and "queries" in result.stdout  # the summary table
    return out


def _score(setup, submission: Path, *extra) -> dict:
    *_, calls, artifact = setup
    result = _cli("score", submission, "--against", artifact, "--cache-dir", calls, "--json",
                  *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_writes_a_schema_valid_submission_that_scores(setup, method):
    *_, artifact = setup
    out = _judge(setup, method)

    kind = METHODS[method].kind
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    for line in lines:
        check(line, f"submission-{kind}")
    assert read_submission(out).kind == kind
    assert [line["qid"] for line in lines] == [r["qid"] for r in load_artifact(artifact).records]
    manifest = json.loads(out.with_name(out.stem + ".manifest.json").read_text())
    assert (manifest["method"], manifest["kind"], manifest["pool"], manifest["k"]) == (
        method, kind, "rp", 3)
    assert manifest["llm"] is None if method == "retrieval" else (
        manifest["llm"]["alias"] == "smollm2-135m")
    for template in manifest["prompt_templates"].values():
        assert len(template["sha256"]) == 64 and template["text"]
    report = _score(setup, out)
    # an lvr answer that names no passage ranks nothing: left out of the mean, as the paper's
    left_out = report["counts"].get("empty_rankings_left_out", 0)
    assert report["kind"] == kind and report["counts"]["queries"] + left_out >= 1
    assert left_out == sum(1 for line in lines if line.get("ranking") == [])
    metric = "f1" if kind == "selection" else "ndcg@5"
    if report["counts"]["queries"]:
        assert 0 <= report["metrics"][metric] <= 1


def test_the_pools_are_the_labels_pools(setup):
    *_, artifact = setup
    out = _judge(setup, "retrieval")
    ranked = {r["qid"]: r["ranking"] for r in map(json.loads, out.read_text().splitlines())}
    labelled = {r["qid"]: [c["pid"] for c in r["candidates"]]
                for r in load_artifact(artifact).records}
    assert ranked == labelled


def test_with_answer_uses_the_artifacts_all_passage_answer_from_the_cache(setup):
    *_, calls, artifact = setup
    before = cache_stats(calls).misses
    out = _judge(setup, "lvs", "--with-answer")

    records = {r["qid"]: r for r in load_artifact(artifact).records}
    for line in map(json.loads, out.read_text().splitlines()):
        assert line["pseudo_answer"] == records[line["qid"]]["rag"]["all"]["answer"]
    assert cache_stats(calls).misses - before == 2  # the two listwise prompts only


def test_baseline_prints_the_papers_table_layout(setup):
    *_, calls, artifact = setup
    # every query ranked (SmolLM2 often names no passage), so that both rows have numbers
    lvr, retrieval = _judge(setup, "lvr", "--fill-unranked"), _judge(setup, "retrieval")
    result = _cli("score", lvr, "--against", artifact, "--baseline", retrieval,
                  "--cache-dir", calls)

    assert result.exit_code == 0, result.output
    assert "the paper's Table 5 layout (%)" in result.stdout
    report = _score(setup, lvr, "--baseline", retrieval)
    for name, metrics in (("lvr-fill-unranked", report["metrics"]), ("retrieval",
                                                       report["baseline"]["metrics"])):
        row = next(line for line in result.stdout.splitlines() if line.startswith(f"│ {name} "))
        assert f"{100 * metrics['ndcg@5']:.2f}" in row


def test_rag_answers_with_the_selection_beside_the_artifacts_accuracies(setup):
    root, *_, artifact = setup
    stats = load_artifact(artifact).manifest["stats"]
    # the artifact's own gold utilitarian sets as a selection: its rag.utilitarian answers
    gold = root / "gold-utilitarian.jsonl"
    gold.write_text("".join(json.dumps({"qid": r["qid"], "selected": r["utility_pids"]}) + "\n"
                            for r in load_artifact(artifact).records))
    report = _score(setup, gold, "--rag")
    assert report["metrics"]["f1"] == 1.0
    assert report["metrics"]["rag_accuracy"] == stats["accuracy_utilitarian"]
    assert report["metrics"]["rag_utilitarian_accuracy"] == stats["accuracy_utilitarian"]
    assert report["metrics"]["rag_all_accuracy"] == stats["accuracy_all"]

    pvs = _judge(setup, "pvs")
    result = _cli("score", pvs, "--against", artifact, "--rag", "--baseline", gold,
                  "--cache-dir", setup[2])
    assert result.exit_code == 0, result.output
    assert "the paper's Table 4 layout (%)" in result.stdout and "rag_accuracy" in result.stdout


def test_bad_input_is_one_error_and_writes_nothing(setup):
    root, run, *_ = setup
    out = root / "bad" / "pvs.txt"
    result = _cli("judge", "--llm", "smollm2-135m", "--method", "pvs", *POOLS, "--run", run,
                  "--out", out)
    assert isinstance(result.exception, InputError)
    assert result.exception.line() == f"{out} field 'out': the submission is JSONL: name a " \
                                      ".jsonl file"
    result = _cli("judge", "--method", "lvr", *POOLS, "--run", run, "--out", root / "b.jsonl")
    assert result.exception.line() == "field 'llm': lvr asks an LLM: name one"
    assert not (root / "bad").exists() and not (root / "b.jsonl").exists()


def test_a_kill_between_submission_and_manifest_leaves_no_other_runs_manifest(tmp_path,
                                                                             monkeypatch):
    """No LLM (--method retrieval): the second judgment, with another k, is killed after its
    submission is written; the first's manifest must not stay beside it as if its own."""
    import labeler.workflows.judge as judge_module
    from labeler.paths import file_sha256

    whole = Path(__file__).parents[1] / "fixtures" / "nq_sample_minilm_top3.trec"
    run = tmp_path / "top3.trec"  # cut to the two queries
    run.write_text("".join(line for line in whole.read_text().splitlines(keepends=True)
                           if line.split()[0] in ("nq-open-dev-oracle-0", "nq-open-dev-oracle-1")))
    out = tmp_path / "retrieval.jsonl"
    options = ["judge", "--method", "retrieval", "--dataset", "nq-sample", "--limit", "2",
               "--run", run, "--out", out]
    assert _cli(*options, "--k", "3").exit_code == 0
    manifest = json.loads(judge_module.manifest_path(out).read_text())
    assert manifest["k"] == 3
    assert manifest["submission"] == {"name": out.name, "sha256": file_sha256(out)}

    real = judge_module.atomic_file

    def killed(path, *args):
        if path.name.endswith(".manifest.json"):
            raise KeyboardInterrupt
        return real(path, *args)

    monkeypatch.setattr(judge_module, "atomic_file", killed)
    _cli(*options, "--k", "2")
    assert [len(r["ranking"]) for r in map(json.loads, out.read_text().splitlines())] == [2, 2]
    assert not judge_module.manifest_path(out).exists()
