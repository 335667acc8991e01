"""LVR as the paper ranks and scores it: only the passages the LLM names are in the run (scored
k - position, as its evaluation/ranking-evaluation.py writes them), and a query whose answer
names none has no run lines, so pytrec_eval, and `labeler score`, leave it out of the mean.

The two queries are tests/fixtures/tevatron_nq_dev.jsonl's; each pool is five real DPR passages
of tests/fixtures/tevatron_wiki_corpus.jsonl (its first five for both). The qrels are made up
for the arithmetic: passages 2 and 5 are relevant to the first query, passage 1 to the second.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.scripted import ScriptedBackend

from labeler.cli import cli
from labeler.judges.methods import Judge, JudgeConfig
from labeler.llm.calls import Calls
from labeler.retrieval import Candidate
from labeler.sources.passage import Passage
from labeler.sources.types import Query
from labeler.tasks.base import Shard

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _shard() -> Shard:
    rows = [json.loads(line) for line in (FIXTURES / "tevatron_wiki_corpus.jsonl").open()][:5]
    pool = [Candidate(Passage(r["docid"], r["title"], r["text"]), "retrieved", i)
            for i, r in enumerate(rows, 1)]
    queries = [json.loads(line) for line in (FIXTURES / "tevatron_nq_dev.jsonl").open()]
    return Shard(0, tuple(Query(q["query_id"], q["query"], q["answers"]) for q in queries),
                 {q["query_id"]: pool for q in queries})


def _score(tmp_path: Path, **options) -> tuple[dict, list[dict], list[str]]:
    shard = _shard()
    first = shard.queries[0].question
    # names passages 5 and 3 for the first query; nothing usable for the second
    llm = ScriptedBackend(answer=lambda text: "[5] > [3]" if first in text else "I can't rank.")
    records = Judge(JudgeConfig(dataset="nq", method="lvr", k=5, **options)).submit(
        Calls(llm), shard)
    pids = [c.passage.pid for c in shard.pools[shard.queries[0].qid]]
    (tmp_path / "lvr.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    q1, q2 = (q.qid for q in shard.queries)
    (tmp_path / "qrels").write_text(f"{q1} 0 {pids[1]} 1\n{q1} 0 {pids[4]} 1\n"
                                    f"{q2} 0 {pids[0]} 1\n")
    result = CliRunner().invoke(cli, ["score", str(tmp_path / "lvr.jsonl"), "--against",
                                      str(tmp_path / "qrels"), "--k", "5", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), records, pids


def test_lvr_scores_the_papers_ndcg_at_5(tmp_path):
    report, records, pids = _score(tmp_path)

    assert records[0]["ranking"] == [pids[4], pids[2]]  # the two named, nothing else
    assert records[1]["ranking"] == [] and records[1]["parsed"] == 0
    # pytrec_eval on the run {q1: {p5: 5, p3: 4}}: p5 relevant at rank 1, p2 absent, so
    # DCG = 1 / log2(2), ideal DCG = 1 / log2(2) + 1 / log2(3); q2 has no run lines: left out
    assert report["metrics"]["ndcg@5"] == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-12)
    assert report["counts"]["queries"] == 1
    assert report["counts"]["empty_rankings_left_out"] == 1


def test_fill_unranked_scores_the_unnamed_passages_too(tmp_path):
    report, records, pids = _score(tmp_path, fill_unranked=True)

    assert records[0]["ranking"] == [pids[4], pids[2], pids[0], pids[1], pids[3]]
    assert records[1]["ranking"] == pids  # none named: retrieval order
    # q1: p5 at rank 1, p2 at rank 4; q2: p1 at rank 1; both in the mean
    q1 = (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert report["metrics"]["ndcg@5"] == pytest.approx((q1 + 1.0) / 2, abs=1e-12)
    assert report["counts"]["empty_rankings_left_out"] == 0
