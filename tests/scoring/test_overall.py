"""The Overall row (labeler.scoring.overall): reports of several datasets pooled over all their
queries, as the utility paper's Tables 4-6 do. Two real utility artifacts: the fixture
utility-v1 (SmolLM2, 6 queries, 3 with gold) and nq2's pools labelled by the scripted reader
(2 queries, 1 with gold, 1 known), which also answers every --rag question here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from support.nq2 import cut_run, scripted_utility

import labeler.llm
from labeler.artifacts.reader import load_artifact
from labeler.cli import cli
from labeler.errors import InputError
from labeler.llm.config import LLMConfig
from labeler.metrics.significance import paired_t_test
from labeler.scoring.overall import overall
from labeler.scoring.score import score, score_datasets

FIXTURE = Path(__file__).parent / "fixtures" / "utility-v1"


@pytest.fixture
def artifacts(tmp_path, monkeypatch):
    """(tmp_path, [utility-v1, the scripted artifact], their records), every model load giving
    the scripted backend."""
    folder, scripted = scripted_utility(cut_run(tmp_path), tmp_path / "out")
    monkeypatch.setattr(labeler.llm, "load_backend", lambda name, **options: scripted)
    folders = [FIXTURE, folder]
    return tmp_path, folders, [load_artifact(f).records for f in folders]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _submissions(root: Path, records: list[list[dict]], kind: str, name: str, flip: bool):
    """Per artifact, a `kind` submission over its candidates: the pool order (a selection:
    the first candidate), or with `flip` reversed (the last)."""
    out = []
    for i, recs in enumerate(records):
        lines = []
        for r in recs:
            pids = [c["pid"] for c in r["candidates"]][::-1 if flip else 1]
            lines.append({"qid": r["qid"], "ranking": pids} if kind == "ranking"
                         else {"qid": r["qid"], "selected": pids[:1]})
        out.append(_write(root / f"{name}-{i}.jsonl", lines))
    return out


def test_ranking_overall_pools_queries_not_datasets(artifacts):
    root, folders, records = artifacts
    subs = _submissions(root, records, "ranking", "flip", flip=True)
    bases = _submissions(root, records, "ranking", "pool", flip=False)
    reports = [score(s, f, baseline=b) for s, f, b in zip(subs, folders, bases)]
    pooled = overall(reports)

    values = np.concatenate([r.per_query["ndcg@5"] for r in reports])
    assert len(values) == 3 + 1  # the queries with gold of each
    assert pooled.summary["ndcg@5"] == pytest.approx(values.mean())
    datasets_mean = np.mean([r.summary["ndcg@5"] for r in reports])
    assert pooled.summary["ndcg@5"] != pytest.approx(datasets_mean)  # 3:1, not 1:1
    assert pooled.counts["queries"] == 4 and pooled.counts["empty_gold_left_out"] == 3 + 1
    # both artifacts are nq-sample: the references tell the queries apart
    assert pooled.qids[0] == f"{FIXTURE}/{reports[0].qids[0]}" and len(set(pooled.qids)) == 4
    base = np.concatenate([r.baseline.per_query["ndcg@5"] for r in reports])
    assert pooled.tests["ndcg@5"] == paired_t_test(values, base)


def test_selection_overall_f1_of_pooled_precision_and_recall(artifacts):
    root, folders, records = artifacts
    subs = _submissions(root, records, "selection", "first", flip=False)
    reports = [score(s, f) for s, f in zip(subs, folders)]
    pooled = overall(reports)

    gold = [{r["qid"]: set(r["utility_pids"]) for r in recs} for recs in records]
    hits = [(len({s} & g[q]), len(g[q])) for recs, g in zip(records, gold)
            for r in recs for q, s in [(r["qid"], r["candidates"][0]["pid"])] if g[q]]
    p = np.mean([h for h, _ in hits])  # one passage selected a query
    r = np.mean([h / n for h, n in hits])
    assert pooled.summary["precision"] == pytest.approx(p)
    assert pooled.summary["recall"] == pytest.approx(r)
    assert pooled.summary["f1"] == pytest.approx(2 * p * r / (p + r))
    assert pooled.counts["queries_with_gold"] == len(hits) == 4
    assert pooled.counts["queries_empty_gold"] == 4


def test_rag_overall_splits_known_and_unknown_over_all_queries(artifacts):
    root, folders, records = artifacts
    subs = _submissions(root, records, "ranking", "pool", flip=False)
    reports = score_datasets(list(zip(subs, folders, [None, None])), rag=True,
                             llm=LLMConfig("scripted"))
    pooled = overall(reports)

    known = np.array([r["known"] for recs in records for r in recs])
    correct = pooled.per_query["rag_accuracy"]
    assert len(correct) == 8 and pooled.counts["known_queries"] == int(known.sum()) == 1
    assert pooled.summary["rag_accuracy_known"] == correct[known].mean()
    assert pooled.summary["rag_accuracy_unknown"] == correct[~known].mean()
    own = np.array([r["rag"]["all"]["correct"] for recs in records for r in recs])
    assert pooled.summary["rag_all_accuracy"] == own.mean()
    assert pooled.summary["rag_all_accuracy_unknown"] == own[~known].mean()


def test_cli_prints_each_dataset_and_overall(artifacts):
    root, folders, records = artifacts
    subs = _submissions(root, records, "ranking", "flip", flip=True)
    bases = _submissions(root, records, "ranking", "pool", flip=False)
    args = ["score", *map(str, subs)]
    for folder, base in zip(folders, bases):
        args += ["--against", str(folder), "--baseline", str(base)]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [d["counts"]["queries"] for d in out["datasets"]] == [3, 1]
    assert out["overall"]["counts"]["queries"] == 4 and out["overall"]["submission"] == "Overall"
    want = overall([score(s, f, baseline=b) for s, f, b in zip(subs, folders, bases)])
    assert out["overall"]["metrics"]["ndcg@5"] == want.summary["ndcg@5"]
    assert out["overall"]["baseline"]["tests"]["ndcg@5"]["p"] == want.tests["ndcg@5"].p

    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("│ Overall"))
    assert f"{100 * want.summary['ndcg@5']:.2f}" in row and "W/T/L" in result.stdout


def test_bad_combinations_are_one_error(artifacts):
    root, folders, records = artifacts
    ranking = _submissions(root, records, "ranking", "r", flip=False)
    selection = _submissions(root, records, "selection", "s", flip=False)
    result = CliRunner().invoke(cli, ["score", *map(str, ranking), "--against", str(folders[0])])
    assert result.exit_code == 1 and result.exception.line() == (
        "field 'against': 2 submissions, 1 --against and 0 --baseline: give one --against "
        "(and, if any, one --baseline) per submission, in the same order")
    reports = [score(s, f) for s, f in zip([ranking[0], selection[1]], folders)]
    with pytest.raises(InputError, match="one kind of submission, got ranking and selection"):
        overall(reports)
    with pytest.raises(InputError, match="each dataset once"):
        overall([reports[0], score(ranking[0], folders[0])])
    rag = score(ranking[1], folders[1], rag=True, llm=LLMConfig("scripted"))
    with pytest.raises(InputError, match="score every dataset with the same options"):
        overall([reports[0], rag])
    with pytest.raises(InputError, match="none given"):
        overall([])


def test_the_datasets_table_says_the_missing_rule_in_force(artifacts):
    root, folders, records = artifacts
    subs = _submissions(root, records, "ranking", "flip", flip=True)
    subs[0].write_text("".join(subs[0].read_text().splitlines(keepends=True)[1:]))  # 1 absent
    args = ["score", *map(str, subs)]
    for folder in folders:
        args += ["--against", str(folder)]

    for rule, how in (("skip", "left out"), ("zero", "scored 0")):
        shown = CliRunner().invoke(cli, [*args, "--missing", rule])
        assert shown.exit_code == 0, shown.output
        assert f"--missing {rule} on " in shown.stdout, shown.stdout
        assert f"1 not in the submission {how}" in " ".join(shown.stdout.split())
    pooled = overall([score(s, f, missing=m) for s, f, m in zip(subs, folders, ("skip", "zero"))])
    assert pooled.missing_rule == "mixed"
