"""`labeler compare` over two utility artifacts of nq-sample: the bundled SmolLM2 (built end
to end) and the scripted backend as a second LLM, then `labeler push` of the comparison to the
local Hub server (tests/support/hub_server.py).

Two queries, the real top-3 of tests/fixtures/nq_sample_minilm_top3.trec (MiniLM over
nq-sample's corpus), answers capped at 32 new tokens, one module-wide call cache; the scripted
reader is tests/support/nq2.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hub.conftest import TOKEN, hub  # noqa: F401  (the local Hub server fixture)
from support.nq2 import copy_nq2_build, scripted_utility
from support.plugins import install

from labeler.artifacts import load_artifact
from labeler.cli import cli
from labeler.errors import InputError
from labeler.workflows.compare import HUMAN, compare, jaccard
from labeler.workflows.validate import validate_path


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory, nq2_build):
    """(root, call cache, SmolLM2's artifact, the scripted one, the scripted backend)."""
    root = tmp_path_factory.mktemp("compare")
    run, calls, smol = copy_nq2_build(nq2_build, root)
    other, scripted = scripted_utility(run, root / "out")
    return root, calls, smol, other, scripted


def test_the_diagonal_is_each_artifacts_own_gold_utilitarian_accuracy(artifacts):
    root, calls, smol, other, scripted = artifacts
    before = len(scripted.batches("generate"))
    compared = compare([smol, other], out=root / "out", backends={"scripted": scripted},
                       cache_dir=calls)

    transfer = {row["reader"]: row for row in compared.transfer.to_dicts()}
    for folder in (smol, other):
        manifest = load_artifact(folder).manifest
        own = transfer[manifest["llm"]][manifest["llm"]]
        assert own == manifest["stats"]["accuracy_utilitarian"]
        assert transfer[manifest["llm"]][HUMAN] == manifest["stats"]["accuracy_human_gold"]
    # SmolLM2 with the scripted GUPs: with an equal set its own rag.utilitarian answer, with
    # an empty one its closed-book answer (the Nobel query, which the scripted reader knows)
    mine = {r["qid"]: r for r in load_artifact(smol).records}
    theirs = {r["qid"]: set(r["utility_pids"]) for r in load_artifact(other).records}
    assert not theirs["nq-open-dev-oracle-0"]
    expected = [mine[q]["known"] if not gups else mine[q]["rag"]["utilitarian"]["correct"]
                for q, gups in theirs.items()]
    assert all(not gups or gups == set(mine[q]["utility_pids"]) for q, gups in theirs.items())
    assert transfer["smollm2-135m"]["scripted"] == sum(expected) / len(expected)
    # the scripted reader: one batched call for both passage sets of both queries
    [asked] = scripted.batches("generate")[before:]
    assert len(asked) <= 4
    assert compared.path == root / "out" / "compare" / "nq-sample" / "smollm2-135m+scripted" / "v1"


def test_overlap_is_the_mean_number_of_shared_passages_over_all_queries(artifacts):
    root, calls, smol, other, scripted = artifacts
    compared = compare([smol, other], out=root / "again", backends={"scripted": scripted},
                       cache_dir=calls)

    records = {llm: {r["qid"]: r for r in load_artifact(folder).records}
               for llm, folder in (("smollm2-135m", smol), ("scripted", other))}
    gups = {llm: {q: set(r["utility_pids"]) for q, r in by_qid.items()}
            for llm, by_qid in records.items()}
    human = {q: {c["pid"] for c in r["candidates"] if c["gold"]}
             for q, r in records["smollm2-135m"].items()}  # the same pools for both
    qids = list(human)
    pairs = {(r["reader"], r["passages_of"]): r for r in compared.records}
    overlap = {row["reader"]: row for row in compared.overlap.to_dicts()}
    jaccards = {row["reader"]: row for row in compared.jaccard.to_dicts()}
    for a, b in (("smollm2-135m", "scripted"), ("scripted", "smollm2-135m")):
        shared = [len(gups[a][q] & gups[b][q]) for q in qids]  # an empty set shares 0
        pair = pairs[a, b]
        assert (pair["overlap"], pair["overlap_queries"]) == (sum(shared) / len(qids), 2)
        assert overlap[a][b] == pair["overlap"] == overlap[b][a]  # symmetric
        both = [v for v in (jaccard(gups[a][q], gups[b][q]) for q in qids) if v is not None]
        assert pair["jaccard_queries"] == len(both)
        assert pair["jaccard"] == (sum(both) / len(both) if both else None)
        assert jaccards[a][b] == pair["jaccard"]
    for llm, folder in (("smollm2-135m", smol), ("scripted", other)):
        # with itself: its mean number of GUPs (the build's statistic, Table 2)
        assert overlap[llm][llm] == load_artifact(folder).manifest["stats"]["mean_utilitarian"]
        assert overlap[llm][llm] == sum(len(gups[llm][q]) for q in qids) / len(qids)
        # with the human gold (Fig. 2 a-c): its GUPs that are human gold, per query
        with_human = [len(gups[llm][q] & human[q]) for q in qids]
        assert overlap[llm][HUMAN] == sum(with_human) / len(qids)
    # the scripted reader's GUPs hold a gold answer: nq2's pools give it some, and at least
    # one a human gold passage (a count only a right intersection gives)
    assert overlap["scripted"][HUMAN] > 0 and overlap["scripted"]["scripted"] > 0


def test_known_and_unknown_queries_split_each_accuracy(artifacts):
    root, calls, smol, other, scripted = artifacts
    compared = compare([smol, other], out=root / "split", backends={"scripted": scripted},
                       cache_dir=calls)

    split = {(row["reader"], row["split"]): row for row in compared.known_unknown.to_dicts()}
    for folder in (smol, other):
        records = load_artifact(folder).records
        llm = records[0]["llm"]
        for name, known in (("known", True), ("unknown", False)):
            mine = [r for r in records if r["known"] is known]
            row = split[llm, name]
            assert row["queries"] == len(mine)
            own = [r["rag"]["utilitarian"]["correct"] for r in mine]
            assert row[llm] == (sum(own) / len(own) if own else None)
            gold = [r["rag"]["human_gold"]["correct"] for r in mine if r["rag"]["human_gold"]]
            assert row["human_gold_queries"] == len(gold)
            assert row[HUMAN] == (sum(gold) / len(gold) if gold else None)
    # the scripted reader knows the Nobel query only; SmolLM2 knows neither
    assert (split["scripted", "known"]["queries"], split["scripted", "unknown"]["queries"]) \
        == (1, 1)
    assert split["scripted", "known"]["scripted"] == 1.0  # no GUP: its right closed-book answer
    assert compared.figures["4"] is compared.known_unknown
    assert compared.figures["2"] is compared.overlap


def test_images_are_written_shown_by_the_card_and_pushed(artifacts, hub, monkeypatch):  # noqa: F811
    root, calls, smol, other, scripted = artifacts
    out = root / "pushed"
    folder = compare([smol, other], out=out, backends={"scripted": scripted},
                     cache_dir=calls).path

    assert validate_path(folder) == []  # records, manifest and card as `labeler validate` reads
    card = (folder / "README.md").read_text()
    for image in ("transfer.png", "overlap.png", "jaccard.png", "known_unknown.png"):
        assert (folder / image).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert f"]({image})" in card
    assert "| `smollm2-135m` |" in card
    assert "| `scripted` | known | 1 | 1 |" in card  # the known/unknown table, with counts
    result = CliRunner().invoke(cli, ["push", str(folder), "--repo", "lab/utility-labels"])

    assert result.exit_code == 0, result.output
    files = hub.repo("lab/utility-labels").resolve("main").files
    prefix = "compare/nq-sample/smollm2-135m+scripted/v1"
    for name in ("transfer.png", "overlap.png", "jaccard.png", "known_unknown.png", "README.md",
                 "data-00000.jsonl", "manifest.json"):
        assert files[f"{prefix}/{name}"] == (folder / name).read_bytes()
    assert "compare.nq-sample.smollm2-135m+scripted" in files["README.md"].decode()


def test_cli_loads_each_artifacts_llm_and_prints_the_tables(artifacts, monkeypatch):
    root, calls, smol, other, scripted = artifacts
    import labeler.llm
    import labeler.llm.models

    # the scripted artifact's backend, installed as a plugin backend is
    install(root / "site", {"name": "labeler-scripted", "version": "0", "entry-points": {
        "labeler.backends": {"scripted": "support.scripted:ScriptedBackend"}}}, monkeypatch)

    real = labeler.llm.load_backend
    loaded = []

    def load(name, **options):  # the scripted artifact's model is the scripted backend
        loaded.append(name)
        return scripted if name == "scripted" else real(name, **options)

    monkeypatch.setattr(labeler.llm, "load_backend", load)
    resolve = labeler.llm.models.resolve_model  # "scripted" resolves as a model found here
    monkeypatch.setattr(labeler.llm.models, "resolve_model",
                        lambda name: resolve("smollm2-135m" if name == "scripted" else name))
    result = CliRunner().invoke(cli, ["compare", str(smol), str(other), "--out",
                                      str(root / "cli"), "--cache-dir", str(calls)])

    assert result.exit_code == 0, result.output
    assert loaded == ["smollm2-135m", "scripted"]  # each by the name its manifest gives
    own = load_artifact(smol).manifest["stats"]["accuracy_utilitarian"]
    row = next(line for line in result.stdout.splitlines() if line.startswith("│ smollm2-135m"))
    assert row.split("│")[2].strip() == f"{own:.1%}"  # the diagonal
    overlap = load_artifact(smol).manifest["stats"]["mean_utilitarian"]  # with itself
    rows = [line for line in result.stdout.splitlines() if line.startswith("│ smollm2-135m")]
    assert rows[1].split("│")[2].strip() == f"{overlap:.2f}"  # the overlap table's diagonal
    assert [row.split("│")[2].strip() for row in rows[3:5]] == ["known", "unknown"]
    assert "Passages shared per query" in result.stdout and "Jaccard index" in result.stdout
    assert result.stdout.strip().endswith("smollm2-135m+scripted/v1")


def test_bad_input_is_refused_before_any_llm_work(artifacts, tmp_path):
    _, _, smol, other, _ = artifacts
    with pytest.raises(InputError, match="at least one utility artifact"):
        compare([], out=tmp_path)
    with pytest.raises(InputError, match="'smollm2-135m' is given twice"):
        compare([smol, smol], out=tmp_path)
    result = CliRunner().invoke(cli, ["compare", str(smol), str(other), "--llm", "nope"])
    assert result.exit_code == 2 and "expected ALIAS=MODEL" in result.output
    result = CliRunner().invoke(cli, ["compare", str(smol), str(other), "--out", str(tmp_path)])
    line = result.exception.line()  # the scripted artifact's model is nowhere here
    assert line.startswith("field 'llm': the artifact's LLM 'scripted' is not found here: "
                           "unknown model 'scripted'.")
    assert line.endswith("(name the model to answer with: --llm MODEL, for labeler compare "
                         "--llm ALIAS=MODEL)")
    assert not (tmp_path / "compare").exists()


def test_artifacts_of_different_datasets_are_refused_before_any_model_loads(tmp_path,
                                                                            monkeypatch):
    """The real utility artifact of tests/scoring/fixtures, and a copy that says it labels
    another dataset with another LLM: one line naming the dataset, no reader loaded."""
    import shutil

    import labeler.llm

    fixture = Path(__file__).parents[1] / "scoring" / "fixtures" / "utility-v1"
    first, other = tmp_path / "a" / "v1", tmp_path / "b" / "v1"
    shutil.copytree(fixture, first)
    shutil.copytree(fixture, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest |= {"dataset": "tq", "llm": "other-llm"}
    (other / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(labeler.llm, "load_backend", lambda *a, **k: pytest.fail("loaded"))
    result = CliRunner().invoke(cli, ["compare", str(first), str(other),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and isinstance(result.exception, InputError)
    assert result.exception.line() == (
        f"{other} field 'dataset': dataset 'tq', not 'nq-sample' as {first} (compare "
        "artifacts of one dataset)")
    assert not (tmp_path / "out").exists()
