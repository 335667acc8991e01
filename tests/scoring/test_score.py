"""`labeler score` through the CLI: rankings vs pytrec_eval, selections, bad input, outputs."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from click.testing import CliRunner
from scipy import stats

from labeler.cli import cli
from labeler.errors import InputError
from labeler.scoring.reference import parse_hub_spec

FIXTURES = Path(__file__).parent / "fixtures"
QRELS = FIXTURES / "cisi.qrels"  # CISI human judgments, TREC qrels format (see README.md)


def _qrels() -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in QRELS.read_text().splitlines():
        qid, _, docid, label = line.split()
        out.setdefault(qid, {})[docid] = int(label)
    return out


def _run(seed: int, share: float = 0.8) -> dict[str, dict[str, float]]:
    """A run over CISI doc ids for most CISI queries, with tied scores."""
    rng = random.Random(seed)
    run = {}
    for qid, judged in _qrels().items():
        if rng.random() < share:
            docs = rng.sample(sorted(judged), k=len(judged) // 2) + [
                str(rng.randint(1, 1460)) for _ in range(15)]
            run[qid] = {d: float(rng.randint(0, 5)) for d in docs}
    return run


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _score(*args: str):
    return CliRunner().invoke(cli, ["score", *map(str, args)])


def _json(*args: str) -> dict:
    result = _score(*args, "--json")
    assert result.exit_code == 0, result.output + repr(result.exception)
    return json.loads(result.stdout)


def _pytrec_means(run, qrels) -> dict[str, np.ndarray]:
    per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_5", "ndcg_cut_10", "recall_10"}).evaluate(run)
    top = {q: dict(sorted(d.items(), key=lambda x: (x[1], x[0]), reverse=True)[:10])
           for q, d in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top)
    return {
        "ndcg@5": np.array([m["ndcg_cut_5"] for m in per.values()]),
        "ndcg@10": np.array([m["ndcg_cut_10"] for m in per.values()]),
        "recall@10": np.array([m["recall_10"] for m in per.values()]),
        "mrr@10": np.array([m["recip_rank"] for m in rr.values()]),
    }


def test_ranking_jsonl_and_trec_run_match_pytrec_eval(tmp_path):
    run, qrels = _run(0), _qrels()
    # half the lines as {qid, scores}, half as {qid, ranking} in trec_eval's order
    lines = []
    for i, (qid, docs) in enumerate(run.items()):
        if i % 2:
            order = sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)
            lines.append({"qid": qid, "ranking": [d for d, _ in order]})
        else:
            lines.append({"qid": qid, "scores": docs})
    sub = _write(tmp_path / "run.jsonl", lines)
    trec = _write(tmp_path / "run.trec", [f"{q} Q0 {d} 0 {s} tag" for q, docs in run.items()
                                          for d, s in docs.items()])
    want = _pytrec_means(run, qrels)
    for path in (sub, trec):
        skip = _json(path, "--against", QRELS)  # judged queries not run are left out, as
        zero = _json(path, "--against", QRELS, "--missing", "zero")  # trec_eval; -c: 0
        assert skip["counts"]["queries"] == len(run) and zero["counts"]["queries"] == len(qrels)
        assert zero["counts"]["missing"] == skip["counts"]["missing"] == len(qrels) - len(run) > 0
        assert (skip["missing_rule"], zero["missing_rule"]) == ("skip", "zero")
        for name, values in want.items():
            assert skip["metrics"][name] == pytest.approx(values.mean(), abs=1e-12), name
            assert zero["metrics"][name] == pytest.approx(values.sum() / len(qrels), abs=1e-12)


def test_the_table_says_which_queries_its_means_are_over(tmp_path):
    """A run of two CISI queries (a --limit build's) against all of CISI's qrels: means over
    its two, as trec_eval's and the build's card; the table says so, and how to count 0."""
    run = dict(list(_run(seed=3, share=1.0).items())[:2])
    trec = _write(tmp_path / "run.trec", [f"{q} Q0 {d} 0 {s} tag" for q, docs in run.items()
                                          for d, s in docs.items()])
    shown = " ".join(_score(trec, "--against", QRELS).stdout.split())
    others = len(_qrels()) - 2
    assert (f"means over 2 queries; --missing skip: {others} of the reference's not in the "
            "submission left out, as trec_eval does (--missing zero would score them 0)") in shown
    shown = " ".join(_score(trec, "--against", QRELS, "--missing", "zero").stdout.split())
    assert (f"means over {others + 2} queries; --missing zero: {others} not in the submission "
            "scored 0 (--missing skip would leave them out)") in shown  # the rule in force first


def test_selection_against_qrels_and_per_query_file(tmp_path):
    sub = _write(tmp_path / "sel.jsonl", [
        {"qid": "1", "selected": ["28", "35", "35", "1"]},  # 2 of 46 gold, 3 distinct picks
        {"qid": 2, "selected": []},  # integer qid is compared as a string; empty selection
    ])
    out = tmp_path / "deep" / "rows.jsonl"
    report = _json(sub, "--against", QRELS, "--missing", "skip", "--per-query", out,
                   "--drop-invalid-pids")  # the repeated '35' dropped, counted
    assert report["counts"]["dropped_pids"] == 1
    n1 = sum(1 for line in QRELS.read_text().splitlines() if line.startswith("1 "))
    p, r = (2 / 3 + 0) / 2, (2 / n1 + 0) / 2
    assert report["kind"] == "selection"
    assert report["metrics"]["precision"] == pytest.approx(p)
    assert report["metrics"]["recall"] == pytest.approx(r)
    assert report["metrics"]["f1"] == pytest.approx(2 * p * r / (p + r))
    assert report["metrics"]["empty_gold_accuracy"] is None  # CISI has no empty gold
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["qid"] for r in rows] == ["1", "2"] and rows[1]["precision"] == 0.0
    assert rows[0]["accuracy"] is None and rows[0]["missing"] is False


def test_baseline_paired_t_test(tmp_path):
    qrels = _qrels()
    runs = [_run(seed, share=1.0) for seed in (1, 2)]
    paths = [_write(tmp_path / f"r{i}.jsonl", [{"qid": q, "scores": d} for q, d in r.items()])
             for i, r in enumerate(runs)]
    report = _json(paths[0], "--against", QRELS, "--baseline", paths[1])
    a, b = (_pytrec_means(r, qrels)["ndcg@10"] for r in runs)
    test = report["baseline"]["tests"]["ndcg@10"]
    assert test["p"] == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=1e-9)
    assert (test["wins"], test["losses"]) == (int(np.sum(a - b > 1e-12)), int(np.sum(b - a > 1e-12)))
    assert test["wins"] + test["ties"] + test["losses"] == len(qrels)
    table = _score(paths[0], "--against", QRELS, "--baseline", paths[1])
    assert table.exit_code == 0 and "W/T/L" in table.stdout and "ndcg@10" in table.stdout


RANKING = '{"qid": "1", "ranking": ["28", "35"]}'


@pytest.mark.parametrize("lines, where, message", [
    ([RANKING, '{"qid": "2", "ranking": ["29"'], "2",
     "invalid JSON: Expecting ',' delimiter (column 30)"),
    ([RANKING, '{"qid": "2", "selected": ["29"]}'], "2",
     "not a ranking record: expected {qid, ranking} or {qid, scores}, got fields qid, selected"),
    ([RANKING, '{"qid": "9999", "ranking": ["1"]}'], "2 field 'qid'", "unknown qid '9999'"),
    ([RANKING, "", RANKING], "3 field 'qid'", "duplicate qid '1' (first on line 1)"),
    ([RANKING, '{"qid": "2", "scores": {"29": NaN}}'], "2",
     "invalid JSON: NaN is not a JSON value"),
    ([RANKING, '{"qid": "2", "scores": {"29": 1e999}}'], "2 field 'scores.29'",
     "score inf is not a finite number"),
    (['{"qid": "2", "scores": {"29": "high"}}'], "1 field 'scores.29'",
     "'high' is not of type 'number'"),
    (['{"qid": "2", "ranking": ["29", "29"]}'], "1 field 'ranking'", "has non-unique elements"),
    (['{"qid": "2", "ranking": [], "scores": {}}'], "1", "give either 'ranking' or 'scores'"),
    (['{"qid": "2", "answer": "x"}'], "1", "cannot tell the kind"),
    (["[1, 2]"], "1", "expected a JSON object, got list"),
    (["1 Q0 28 1 0.5 tag", "1 Q0 35 2 high tag"], "2 field 'score'", "score 'high' is not a number"),
    (["1 Q0 28 1 0.5 tag", "1 Q0 28 2 0.4 tag"], "2 field 'docid'", "duplicate docid '28'"),
    (["1 Q0 28 1 0.5"], "1", "a TREC run line has 6 fields"),
    (["1 Q0 28 1 nan tag"], "1 field 'score'", "score nan is not a finite number"),
])
def test_bad_lines_name_file_line_and_problem_and_write_nothing(tmp_path, lines, where, message):
    sub = _write(tmp_path / "sub.jsonl", lines)
    out = tmp_path / "rows.jsonl"
    result = _score(sub, "--against", QRELS, "--per-query", out)
    assert result.exit_code == 1
    assert isinstance(result.exception, InputError)
    assert result.exception.line().startswith(f"{sub}:{where}: ")
    assert message in result.exception.line()
    assert not out.exists() and list(tmp_path.iterdir()) == [sub]


def test_empty_file(tmp_path):
    sub = _write(tmp_path / "sub.jsonl", ["", "  "])
    result = _score(sub, "--against", QRELS)
    assert result.exit_code == 1
    assert result.exception.line() == f"{sub}: empty submission: no records"


def test_wrong_forced_kind_and_wrong_kind_baseline(tmp_path):
    sub = _write(tmp_path / "sub.jsonl", [RANKING])
    sel = _write(tmp_path / "sel.jsonl", ['{"qid": "1", "selected": ["28"]}'])
    result = _score(sub, "--against", QRELS, "--kind", "selection")
    assert result.exit_code == 1 and "sub.jsonl:1: not a selection record" in result.exception.line()
    result = _score(sub, "--against", QRELS, "--baseline", sel)
    assert result.exit_code == 1 and "sel.jsonl:1: not a ranking record" in result.exception.line()


def test_lenient_skips_and_counts_bad_lines(tmp_path):
    sub = _write(tmp_path / "sub.jsonl", [
        RANKING, '{"qid": "2", "ranking": ["29"', '{"qid": "9999", "ranking": ["1"]}', RANKING,
        '{"qid": "3", "scores": {"60": 1.5}}',
    ])
    report = _json(sub, "--against", QRELS, "--lenient", "--missing", "skip")
    assert report["counts"]["skipped_lines"] == 3 and report["counts"]["queries"] == 2
    result = _score(sub, "--against", QRELS, "--lenient")
    assert result.exit_code == 0 and "skipped 3 bad lines" in result.stderr


def test_bad_qrels_and_missing_reference(tmp_path):
    sub = _write(tmp_path / "sub.jsonl", [RANKING])
    qrels = _write(tmp_path / "bad.qrels", ["1 0 28 1", "1 0 35 yes"])
    result = _score(sub, "--against", qrels)
    assert result.exit_code == 1
    assert result.exception.line() == f"{qrels}:2 field 'label': label 'yes' is not an integer"
    result = _score(sub, "--against", tmp_path / "nope")
    assert result.exit_code == 1 and "reference not found" in result.exception.line()


def test_extraction_needs_answers(tmp_path):
    sub = _write(tmp_path / "ev.jsonl", ['{"qid": "1", "evidence": "library automation"}'])
    result = _score(sub, "--against", QRELS)
    assert result.exit_code == 1
    assert "extraction is scored against a reference with questions and answers" in (
        result.exception.line())


def test_console_entry_point_prints_one_error_line(tmp_path):
    sub = _write(tmp_path / "sub.jsonl", [RANKING, RANKING])
    command = [sys.executable, "-c", "from labeler.cli import main; main()", "score", str(sub),
               "--against", str(QRELS)]
    proc = subprocess.run(command, check=False, capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == (f"error: {sub}:2 field 'qid': duplicate qid '1' "
                                   "(first on line 1)")


@pytest.mark.parametrize("spec, parsed", [
    ("hub:lab/utility-labels", ("lab/utility-labels", None, None)),
    ("hub:lab/utility-labels:utility.nq-sample.smollm2-135m",
     ("lab/utility-labels", "utility.nq-sample.smollm2-135m", None)),
    ("hub:lab/utility-labels@utility.nq-sample.smollm2-135m.v1",
     ("lab/utility-labels", None, "utility.nq-sample.smollm2-135m.v1")),
    ("hub:lab/utility-labels:utility.nq.llama3.1-8b@main",
     ("lab/utility-labels", "utility.nq.llama3.1-8b", "main")),
])
def test_hub_spec(spec, parsed):
    assert parse_hub_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["hub:", "hub:me/labels:", "hub:me/labels@", "hub::cfg"])
def test_bad_hub_spec(spec):
    with pytest.raises(InputError, match="expected hub:REPO"):
        parse_hub_spec(spec)


def test_a_selection_outside_the_pool_or_repeating_a_pid_is_named_or_dropped(tmp_path):
    artifact = FIXTURES / "utility-v1"
    gold = "nq-oracle:64aaafc597c5"  # query 0's one utilitarian candidate
    sub = _write(tmp_path / "sel.jsonl", [
        {"qid": "nq-open-dev-oracle-0", "selected": [gold, "../../etc/passwd"]},
        {"qid": "nq-open-dev-oracle-1", "selected": ["nq-oracle:fcd918e70be9"] * 2}])

    result = _score(sub, "--against", artifact)
    assert result.exit_code == 1
    assert result.exception.line().startswith(
        f"{sub}:1 field 'selected': pid '../../etc/passwd' is not one of query "
        "'nq-open-dev-oracle-0''s 4 candidates (select from the query's candidates, each once, "
        "or pass --drop-invalid-pids")
    second = _write(tmp_path / "second.jsonl", sub.read_text().splitlines()[1:])
    assert _score(second, "--against", artifact).exception.line().startswith(
        f"{second}:1 field 'selected': pid 'nq-oracle:fcd918e70be9' selected twice (")

    report = _json(sub, "--against", artifact, "--drop-invalid-pids", "--missing", "skip")
    assert report["counts"]["dropped_pids"] == 2 and report["counts"]["queries"] == 2
    assert _score(sub, "--against", artifact, "--drop-invalid-pids").stderr.count(
        "dropped 2 selected pids") == 1
