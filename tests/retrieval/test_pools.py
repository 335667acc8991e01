"""rp / hgp / mcp pools from a given run and from human gold; errors before any model work."""

from __future__ import annotations

import pytest

from labeler.errors import InputError, UnknownNameError
from labeler.paths import file_sha256
from labeler.retrieval import build_pools, gold_recall
from labeler.sources.passage import Passage
from labeler.sources.registry import load_source
from labeler.sources.types import Source


@pytest.fixture
def sample():
    return load_source("nq-sample", limit=3)


@pytest.fixture
def run_file(tmp_path, sample):
    """q0 retrieves its own gold first; q1 and q2 retrieve q0's gold chunk and a DPR passage."""
    q0, q1, q2 = sample.queries
    lines = [f"{q0.qid} Q0 {q0.gold[0].pid} 1 9.0 t", f"{q0.qid} Q0 11828866 2 8.0 t",
             f"{q0.qid} Q0 flashrag:3 3 7.0 t"]
    for q in (q1, q2):
        lines += [f"{q.qid} Q0 {q0.gold[0].pid} 1 5.0 t", f"{q.qid} Q0 11828866 2 4.0 t"]
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_rp_from_a_run_takes_the_top_k(sample, run_file):
    pools = build_pools(sample, pool="rp", k=2, run=run_file)
    q0, q1, _ = sample.queries
    assert [(c.passage.pid, c.source, c.rank, c.gold) for c in pools[q0.qid]] == [
        (q0.gold[0].pid, "retrieved", 1, True), ("11828866", "retrieved", 2, False)]
    assert [c.gold for c in pools[q1.qid]] == [False, False]
    assert pools.describe() == {"pool": "rp", "k": 2, "encoder": None,
                                "run": {"name": run_file.name, "sha256": file_sha256(run_file)}}
    assert gold_recall(pools, sample) == pytest.approx(1 / 3)


def test_mcp_adds_the_gold_not_retrieved(sample, run_file):
    pools = build_pools(sample, pool="mcp", k=20, run=run_file)
    q0, q1, _ = sample.queries
    assert len(pools[q0.qid]) == 3  # its gold was retrieved: not added twice
    assert [(c.passage.pid, c.source, c.rank, c.gold) for c in pools[q1.qid]] == [
        (q0.gold[0].pid, "retrieved", 1, False), ("11828866", "retrieved", 2, False),
        (q1.gold[0].pid, "human", None, True)]
    assert gold_recall(pools, sample) == 1.0


def test_mcp_deduplicates_by_identical_text(sample, run_file):
    q0 = sample.queries[0]
    same = q0.gold[0]
    q0.gold = [Passage("other-id-same-text", same.title, same.text)]
    pools = build_pools(sample, pool="mcp", k=20, run=run_file)
    assert [c.passage.pid for c in pools[q0.qid]] == [same.pid, "11828866", "flashrag:3"]
    assert pools[q0.qid][0].gold


def test_hgp_is_the_human_gold(sample):
    pools = build_pools(sample, pool="hgp")
    assert {qid: [(c.passage.pid, c.source, c.rank) for c in cands]
            for qid, cands in pools.items()} == {
        q.qid: [(q.gold[0].pid, "human", None)] for q in sample.queries}


def test_a_run_naming_an_unknown_passage_fails(sample, tmp_path):
    path = tmp_path / "run.trec"
    path.write_text(f"{sample.queries[0].qid} Q0 11828866 1 1.0 t\n"
                    f"{sample.queries[0].qid} Q0 not-a-pid 2 0.5 t\n")
    with pytest.raises(InputError) as error:
        build_pools(sample, pool="mcp", run=path)
    assert str(error.value) == f"{path}:2 field 'pid': unknown passage 'not-a-pid' (not in the corpus)"


def test_bad_requests_fail_before_any_model_work(sample):
    with pytest.raises(UnknownNameError) as error:
        build_pools(sample, pool="top20")
    assert str(error.value) == "unknown pool 'top20'. Available: rp, hgp, mcp"
    with pytest.raises(InputError) as error:
        build_pools(sample, k=0)
    assert str(error.value) == "field 'k': k must be at least 1, got 0"

    with pytest.raises(InputError) as error:
        build_pools(Source("msmarco-fqa", "r", [], None))
    assert str(error.value) == "dataset 'msmarco-fqa' has no queries to pool for"

    no_gold = Source("fever", "r", [q.__class__(q.qid, q.question, q.answers) for q in sample.queries],
                     None)
    with pytest.raises(InputError) as error:
        build_pools(no_gold, pool="hgp")
    assert error.value.line() == "field 'pool': dataset 'fever' has no human gold passages (use --pool rp)"
    with pytest.raises(InputError) as error:
        build_pools(no_gold, pool="rp")  # no corpus: fails before an encoder is loaded
    assert error.value.line() == (
        "field 'corpus': dataset 'fever' has no passage corpus to retrieve from "
        "(pass --corpus NAME (kilt-w100, wiki-dpr, msmarco-passage, kilt-wikipedia) or FILE "
        "(FlashRAG corpus jsonl), or --run FILE)")


def test_a_run_with_human_gold_pools_is_refused_before_the_judge_loads(
        sample, tmp_path, monkeypatch, capsys):
    """hgp never reads a run: its pids went unchecked and the judge ran for minutes."""
    import sys

    import labeler.llm
    from labeler.cli import main

    run = tmp_path / "run.trec"
    run.write_text(f"{sample.queries[0].qid} Q0 no-such-pid 1 1.0 t\n")
    with pytest.raises(InputError) as caught:
        build_pools(sample, pool="hgp", run=run)
    assert caught.value.line() == ("field 'run': --run ranks retrieved pools (rp, mcp), and the "
                                   "pools are the human gold (leave --run unset, or use --pool "
                                   "rp or mcp)")
    monkeypatch.setattr(labeler.llm, "load_backend", lambda *a, **k: pytest.fail("loaded"))
    monkeypatch.setattr(sys, "argv", [
        "labeler", "judge", "--dataset", "nq-sample", "--limit", "2", "--method", "pvs",
        "--llm", "smollm2-135m", "--pool", "hgp", "--run", str(run),
        "--out", str(tmp_path / "pvs.jsonl")])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 1
    assert capsys.readouterr().err.splitlines() == [f"error: {caught.value.line()}"]
    assert not (tmp_path / "pvs.jsonl").exists()
