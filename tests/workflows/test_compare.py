"""`labeler compare` over two utility artifacts of nq-sample: the bundled SmolLM2 (built end
to end) and the scripted backend as a second LLM, then `labeler push` of the comparison to the
local Hub server (tests/support/hub_server.py).

Two queries, the real top-3 of tests/fixtures/nq_sample_minilm_top3.trec (MiniLM over
nq-sample's corpus), answers capped at 32 new tokens, one module-wide call cache; the scripted
reader is tests/support/nq2.py's.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from hub.conftest import TOKEN, hub  # noqa: F401  (the local Hub server fixture)
from support.nq2 import copy_nq2_build, scripted_utility

from labeler.artifacts import load_artifact, validate_path
from labeler.cli import cli
from labeler.errors import InputError
from labeler.workflows.compare import HUMAN, compare, jaccard


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


def test_overlap_is_the_mean_jaccard_of_the_gup_sets(artifacts):
    root, calls, smol, other, scripted = artifacts
    compared = compare([smol, other], out=root / "again", backends={"scripted": scripted},
                       cache_dir=calls)

    a = {r["qid"]: set(r["utility_pids"]) for r in load_artifact(smol).records}
    b = {r["qid"]: set(r["utility_pids"]) for r in load_artifact(other).records}
    both = [v for v in (jaccard(a[q], b[q]) for q in a) if v is not None]
    pair = next(r for r in compared.records
                if (r["reader"], r["passages_of"]) == ("smollm2-135m", "scripted"))
    assert pair["overlap_queries"] == len(both)
    assert pair["overlap"] == (sum(both) / len(both) if both else None)
    overlap = {row["reader"]: row for row in compared.overlap.to_dicts()}
    assert overlap["scripted"]["smollm2-135m"] == pair["overlap"]  # symmetric
    assert overlap["scripted"]["scripted"] in (1.0, None)


def test_images_are_written_shown_by_the_card_and_pushed(artifacts, hub, monkeypatch):  # noqa: F811
    root, calls, smol, other, scripted = artifacts
    out = root / "pushed"
    folder = compare([smol, other], out=out, backends={"scripted": scripted},
                     cache_dir=calls).path

    assert validate_path(folder) == []  # records, manifest and card as `labeler validate` reads
    card = (folder / "README.md").read_text()
    for image in ("transfer.png", "overlap.png"):
        assert (folder / image).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert f"]({image})" in card
    assert "| `smollm2-135m` |" in card
    result = CliRunner().invoke(cli, ["push", str(folder), "--repo", "lab/utility-labels"])

    assert result.exit_code == 0, result.output
    files = hub.repo("lab/utility-labels").resolve("main").files
    prefix = "compare/nq-sample/smollm2-135m+scripted/v1"
    for name in ("transfer.png", "overlap.png", "README.md", "data-00000.jsonl", "manifest.json"):
        assert files[f"{prefix}/{name}"] == (folder / name).read_bytes()
    assert "compare.nq-sample.smollm2-135m+scripted" in files["README.md"].decode()


def test_cli_loads_each_artifacts_llm_and_prints_the_tables(artifacts, monkeypatch):
    root, calls, smol, other, scripted = artifacts
    import labeler.llm
    import labeler.llm.models

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
    assert "Mean Jaccard overlap" in result.stdout
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
