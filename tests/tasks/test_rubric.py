"""The rubric task: its question parser on realistic LLM outputs, and `labeler build
--artifact rubric` end to end on cisi-sample with the real bundled SmolLM2."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hub.conftest import hub  # noqa: F401  (the local Hub server fixture)
from support.loading import check_card_types, check_pushed

from labeler.cli import cli
from labeler.errors import InputError
from labeler.formats import Qrels, Run
from labeler.lines import read_jsonl
from labeler.tasks.base import TaskConfig
from labeler.tasks.rubric import RubricConfig
from labeler.tasks.rubric_questions import parse_questions
from labeler.workflows.validate import validate_path

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
def test_rubric_build_on_cisi_sample(loads, tmp_path, request):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "build", "--artifact", "rubric", "--dataset", "cisi-sample", "--llm", "smollm2-135m",
        "--limit", "2", "--k", "10", "--rerank-k", "6", "--max-questions", "4",
        "--direct", "--threshold", "0.5", "--json", "--out", str(out),
        "--cache-dir", str(tmp_path / "calls")])
    assert result.exit_code == 0, result.output
    [built] = json.loads(result.stdout)["versions"]
    [version] = (out / "rubric" / "cisi-sample" / "smollm2-135m").iterdir()
    assert validate_path(version) == []
    manifest = json.loads((version / "manifest.json").read_text())
    assert built["stats"] == manifest["stats"] and manifest["config"]["threshold"] == 0.5
    queries = [r for f in sorted(version.glob("data-*.jsonl")) for _, r in read_jsonl(f)]
    rows = [r for f in sorted(version.glob("candidates-*.jsonl")) for _, r in read_jsonl(f)]
    assert [q["qid"] for q in queries] == ["1", "2"]
    # hf cannot constrain its output: asked for the JSON, never held to it; each query says
    # whether its questions were read as free text, and the manifest counts both
    assert [q["structured"] for q in queries] == [False, False]
    assert manifest["stats"]["structured"] == 0
    assert manifest["stats"]["fallback"] == sum(q["fallback"] for q in queries)
    card = (version / "README.md").read_text()
    assert "only P(yes) > 0.5 counted" in card and "| direct question fused |" in card
    for query in queries:
        mine = [r for r in rows if r["qid"] == query["qid"]]
        assert len(mine) == 10
        assert 1 <= len(query["questions"]) <= 4 or query["retried"]
        for row in mine:
            assert all(0 <= p <= 1 for p in row["p_yes"])
            if row["bm25_rank"] <= 6:
                assert len(row["p_yes"]) == len(query["questions"])
                counted = [p for p in row["p_yes"] if p > 0.5]
                assert row["fused"] == pytest.approx(row["bm25"] + 10 * sum(counted))
                assert row["single_fused"] == pytest.approx(
                    row["bm25"] + (10 * row["single"] if row["single"] > 0.5 else 0))
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
    stats = manifest["stats"]
    assert json.dumps(report).count("ndcg@10") >= 1
    assert stats["ndcg@10_fused"] == pytest.approx(
        sum(q["ndcg@10"]["fused"] for q in queries) / 2)
    # both tables load with the types the card states (`label` is null for an unjudged
    # document), from the folder and pushed to the Hub
    check_card_types(version, tmp_path / "datasets")
    request.getfixturevalue("hub")  # the server, once the build is done
    check_pushed(version, "lab/rubric-labels", tmp_path / "hub-datasets")
    _edits_of_derived_tables_are_refused(version, tmp_path / "edited")


def _edits_of_derived_tables_are_refused(version, edited):
    """A fused score raised, then two documents of fused.trec swapped, each with its sha256
    updated in the manifest: validate derives them again and names file, line and field."""
    import hashlib
    import shutil

    shutil.copytree(version, edited)

    def rewrite(name, lines):
        (edited / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        manifest = json.loads((edited / "manifest.json").read_text(encoding="utf-8"))
        manifest["files"][name] = hashlib.sha256((edited / name).read_bytes()).hexdigest()
        (edited / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")

    rows = (version / "candidates-00000.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(rows[0])
    rewrite("candidates-00000.jsonl", [json.dumps({**row, "fused": row["fused"] + 100}), *rows[1:]])
    assert validate_path(edited) == [
        (f"candidates-00000.jsonl:1: field 'fused' is {row['fused'] + 100!r} but its labels and "
        f"manifest give {row['fused']!r}")]
    rewrite("candidates-00000.jsonl", rows)
    run = (version / "fused.trec").read_text(encoding="utf-8").splitlines()
    first, second = run[0].split(), run[1].split()
    first[2], second[2] = second[2], first[2]  # the top two documents swapped, scores kept
    rewrite("fused.trec", [" ".join(first), " ".join(second), *run[2:]])
    assert validate_path(edited) == [
        f"fused.trec:1: is '{' '.join(first)}' but the labels give '{run[0]}'"]


def test_label_retries_scores_and_fuses_with_a_scripted_llm():
    from support.scripted import ScriptedBackend

    from labeler.retrieval import build_pools
    from labeler.sources.registry import load_source
    from labeler.tasks.base import make_shards
    from labeler.tasks.rubric import RubricTask

    source = load_source("cisi-sample", limit=2)
    pools = build_pools(source, pool="rp", k=5, encoder="bm25")
    [shard] = make_shards(source.queries, pools, 2)
    asked: dict[str, int] = {}

    def answer(text: str) -> str:
        # query 1 lists two questions (one a near repeat); query 2 says nothing usable, twice
        asked[text] = asked.get(text, 0) + 1
        if "descriptive titles" in text:
            return ("1. Does the document discuss titles?\n2. Does the document discuss "
                    "titles?\n3. Is the document about libraries?")
        return "I cannot help with that."

    def probs(text: str, choices) -> dict[str, float]:
        # "Yes" 0.6 and "No" 0.2 when the document mentions titles, the reverse otherwise
        yes, no = (0.6, 0.2) if "title" in text.split("Answer yes or no.")[0] else (0.2, 0.6)
        return {c: {"Yes": yes, "No": no}.get(c, 0.05) for c in choices}

    task = RubricTask(RubricConfig(dataset="cisi-sample", k=5, rerank_k=3, weight=2.0))
    records = task.label(task.calls(ScriptedBackend(answer=answer, probs=probs)), shard)
    tables = task.derive(records, {})
    first, second = tables["data"]
    assert [q["text"] for q in first["questions"]] == [
        "Does the document discuss titles?", "Is the document about libraries?"]
    assert not first["retried"] and second["retried"] and second["questions"] == []
    assert sorted(asked.values()) == [1, 2]  # query 2 asked once more, query 1 once
    rows = [r for r in tables["candidates"] if r["qid"] == "1"]
    for row in rows:
        if row["bm25_rank"] <= 3:
            titled = "title" in source.corpus[row["pid"]].contents
            # the four variants summed: yes 0.6 + 3 · 0.05, no 0.2 + 3 · 0.05 (or the reverse)
            p = (0.75 if titled else 0.35) / 1.1
            assert row["p_yes"] == pytest.approx([p, p])
            assert row["fused"] == pytest.approx(row["bm25"] + 2.0 * 2 * p)
        else:
            assert row["p_yes"] == [] and row["rubric"] is None and row["fused"] == row["bm25"]
    assert [r["bm25_rank"] for r in sorted(rows, key=lambda r: r["rank"])][3:] == [4, 5]
    empty = [r for r in tables["candidates"] if r["qid"] == "2"]
    assert all(r["rubric"] == 0 for r in empty if r["bm25_rank"] <= 3)
    stats = task.statistics(tables["data"])
    assert (stats["queries"], stats["questions"], stats["retried"], stats["empty"]) == (2, 2, 1, 1)


def test_validate_derives_the_rubric_tables_again_with_a_scripted_llm(tmp_path):
    """A version written from scripted P(yes) on the real cisi-sample, with a threshold and a
    weight the derivation must take from the manifest's config: valid as written, and each
    edit of a derived value is named (the slow build test does the same on SmolLM2's)."""
    from support.rubric2 import scripted_rubric

    version = scripted_rubric(tmp_path / "out")
    _edits_of_derived_tables_are_refused(version, tmp_path / "edited")
