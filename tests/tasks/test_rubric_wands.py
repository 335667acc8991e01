"""The rubric on WANDS as the experiment ran it: `labeler build --artifact rubric --dataset
wands` reads WANDS's three files from the tests' mirror of GitHub's raw files (real rows,
tests/fixtures/hub_mirror/wands), ranks its candidates by the experiment's decision arms' BM25
(title^9.4, text^4: bag_of_decisions.yml's `bm25_boosted`, English Snowball stems) and labels them with the real bundled SmolLM2; the BM25
ranking it records equals an independent scorer's (tests/support/bm25_reference.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.bm25_reference import ranking, wands_products

from labeler.cli import cli
from labeler.lines import read_jsonl
from labeler.workflows.validate import validate_path


@pytest.mark.slow
def test_rubric_build_on_wands_ranks_by_the_experiments_bm25(loads, github, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "build", "--artifact", "rubric", "--dataset", "wands", "--llm", "smollm2-135m",
        "--limit", "2", "--rerank-k", "10", "--max-questions", "3", "--out", str(out),
        "--cache-dir", str(tmp_path / "calls")])
    assert result.exit_code == 0, result.output
    assert any("dataset/product.csv" in line for line in github.log)
    [version] = (out / "rubric" / "wands" / "smollm2-135m").iterdir()
    assert validate_path(version) == []
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["license"] == "mit"
    assert manifest["encoder"]["fields"] == {"title": 9.4, "text": 4.0}
    assert manifest["encoder"]["stemmer"] == "english"
    queries = [r for f in sorted(version.glob("data-*.jsonl")) for _, r in read_jsonl(f)]
    rows = [r for f in sorted(version.glob("candidates-*.jsonl")) for _, r in read_jsonl(f)]
    assert [(q["qid"], q["query"]) for q in queries] == [("0", "salon chair"),
                                                         ("1", "smart coffee table")]
    assert queries[0]["relevance"] == {"25434": 2, "12088": 0, "42931": 2, "2636": 2,
                                       "42923": 2}  # label.csv: Exact 2, Irrelevant 0
    products = wands_products()
    for query in queries:
        mine = sorted((r for r in rows if r["qid"] == query["qid"]), key=lambda r: r["bm25_rank"])
        expected = ranking(products, query["query"], {"title": 9.4, "text": 4.0})
        assert mine and [r["pid"] for r in mine] == [pid for pid, _ in expected][:20]
        assert [r["bm25"] for r in mine] == pytest.approx([s for _, s in expected][:20],
                                                          rel=1e-5)
        assert all(len(r["p_yes"]) == len(query["questions"]) for r in mine)  # all reranked
        # the fused score by hand: the reference's 9.4/4 BM25 + decision_weight 10 · Σ P(yes)
        by_hand = dict(expected)
        for row in mine:
            assert row["fused"] == pytest.approx(by_hand[row["pid"]] + 10 * sum(row["p_yes"]),
                                                 rel=1e-5)
