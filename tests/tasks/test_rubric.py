"""The rubric task: its question parser on realistic LLM outputs, and `labeler build
--artifact rubric` end to end on cisi-sample with the real bundled SmolLM2."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from labeler.artifacts import validate_path
from labeler.cli import cli
from labeler.errors import InputError
from labeler.formats import Qrels, Run, read_jsonl
from labeler.tasks.base import TaskConfig
from labeler.tasks.rubric import RubricConfig, parse_questions
from tests.test_build import loads  # noqa: F401  (the fixture: the session's SmolLM2, cached)

NUMBERED = """Here are some yes/no questions to determine if a document is relevant:

1. Does the document discuss the problems of writing descriptive titles?
2. **Title retrieval**: Does the document describe retrieving articles from approximate titles?
3) Does the document compare the content of articles with their titles?
4. Does the document discuss the problems of writing descriptive titles?

These questions can help you decide."""

BULLETED = """Sure! Here's a list:
- Is the document about information science?
* Does the document give a definition of information science?
• Does it mention documentation or librarianship?
-   """

JSON_OUTPUT = """```json
{"questions": ["Does the document describe image recognition?",
               "Does the document discuss automatic pattern recognition methods?",
               ""]}
```"""

PROSE = ("To judge relevance, ask: does the document describe how library users search for "
         "information? Is the study based on a survey of users? Also, whether the document "
         "reports results from a university library matters.")

NOTHING = "I'm sorry, but I need more information about the query before I can help you."


@pytest.mark.parametrize(("output", "expected"), [
    (NUMBERED, ["Does the document discuss the problems of writing descriptive titles?",
                "Does the document describe retrieving articles from approximate titles?",
                "Does the document compare the content of articles with their titles?"]),
    (BULLETED, ["Is the document about information science?",
                "Does the document give a definition of information science?",
                "Does it mention documentation or librarianship?"]),
    (JSON_OUTPUT, ["Does the document describe image recognition?",
                   "Does the document discuss automatic pattern recognition methods?"]),
    (PROSE, [("To judge relevance, ask: does the document describe how library users search "
              "for information?"), "Is the study based on a survey of users?"]),
    (NOTHING, []),
], ids=["numbered", "bulleted", "json", "prose", "nothing"])
def test_questions_are_parsed_from_realistic_outputs(output, expected):
    assert parse_questions(output) == expected


def test_rubric_options_are_checked_and_refused_elsewhere():
    with pytest.raises(InputError, match="max_questions must be at least 1"):
        RubricConfig(dataset="cisi-sample", max_questions=0)
    with pytest.raises(InputError, match="fuses with BM25 scores, not minilm's"):
        RubricConfig(dataset="cisi-sample", encoder="minilm")
    with pytest.raises(InputError, match="--rerank-k does not apply"):
        TaskConfig.from_options(dataset="cisi-sample", rerank_k=5)


@pytest.mark.slow
def test_rubric_build_on_cisi_sample(loads, tmp_path):  # noqa: F811
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "build", "--artifact", "rubric", "--dataset", "cisi-sample", "--llm", "smollm2-135m",
        "--limit", "2", "--k", "10", "--rerank-k", "6", "--max-questions", "4",
        "--single-question", "--out", str(out), "--cache-dir", str(tmp_path / "calls")])
    assert result.exit_code == 0, result.output
    assert "NDCG@10 fused" in result.output
    [version] = (out / "rubric" / "cisi-sample" / "smollm2-135m").iterdir()
    assert validate_path(version) == []
    queries = [r for f in sorted(version.glob("data-*.jsonl")) for _, r in read_jsonl(f)]
    rows = [r for f in sorted(version.glob("candidates-*.jsonl")) for _, r in read_jsonl(f)]
    assert [q["qid"] for q in queries] == ["1", "2"]
    for query in queries:
        mine = [r for r in rows if r["qid"] == query["qid"]]
        assert len(mine) == 10
        assert 1 <= len(query["questions"]) <= 4 or query["retried"]
        for row in mine:
            assert all(0 <= p <= 1 for p in row["p_yes"])
            if row["bm25_rank"] <= 6:
                assert len(row["p_yes"]) == len(query["questions"])
                assert row["fused"] == pytest.approx(row["bm25"] + 10 * sum(row["p_yes"]))
        by_rank = sorted(mine, key=lambda r: r["rank"])
        assert {r["bm25_rank"] for r in by_rank[:6]} == set(range(1, 7))  # the top K reranked
        assert [r["bm25_rank"] for r in by_rank[6:]] == [7, 8, 9, 10]  # the rest: BM25 order
        assert query["ndcg@10"] is not None
    # the fused run scores against the bundled qrels with `labeler score`
    fused = Run.from_file(version / "fused.trec")
    assert {qid: sorted(fused[qid], key=fused[qid].get, reverse=True) for qid in fused} == {
        q["qid"]: [r["pid"] for r in sorted(rows, key=lambda r: r["rank"])
                   if r["qid"] == q["qid"]] for q in queries}
    qrels = tmp_path / "cisi.qrels"
    Qrels({qid: judged for qid, judged in Qrels.from_file(
        "labeler/data/cisi_sample/qrels.txt").items() if qid in fused}).save(qrels)
    scored = CliRunner().invoke(cli, ["score", str(version / "fused.trec"), "--against",
                                      str(qrels), "--k", "10", "--json"])
    assert scored.exit_code == 0, scored.output
    report = json.loads(scored.output)
    stats = json.loads((version / "manifest.json").read_text())["stats"]
    assert json.dumps(report).count("ndcg@10") >= 1
    assert stats["ndcg@10_fused"] == pytest.approx(
        sum(q["ndcg@10"]["fused"] for q in queries) / 2)
