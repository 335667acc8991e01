"""Run files: TREC and JSONL reading, TREC writing, and their errors."""

from __future__ import annotations

import json

import pytest

from labeler.errors import InputError
from labeler.retrieval.runs import read_run, write_trec

QIDS = {"q1", "q2"}
PIDS = {"a", "b", "c"}


def test_trec_round_trip(tmp_path):
    run = {"q1": [("b", 2.5), ("a", 1.0)], "q2": [("c", 0.3)]}
    path = write_trec(run, tmp_path / "out" / "run.trec", tag="t")
    assert path.read_text().splitlines() == [
        "q1 Q0 b 1 2.500000 t", "q1 Q0 a 2 1.000000 t", "q2 Q0 c 1 0.300000 t"]
    assert read_run(path, qids=QIDS, pids=PIDS) == run
    assert [p.name for p in path.parent.iterdir()] == ["run.trec"]  # no temp file left


def test_jsonl_ranking_and_scores(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"qid": "q1", "ranking": ["c", "a"]}) + "\n"
                    + json.dumps({"qid": "q2", "scores": {"a": 0.1, "b": 0.9}}) + "\n")
    run = read_run(path, qids=QIDS, pids=PIDS)
    assert [pid for pid, _ in run["q1"]] == ["c", "a"]
    assert run["q2"] == [("b", 0.9), ("a", 0.1)]


@pytest.mark.parametrize(("second", "expected"), [
    ("q1 Q0 zzz 2 0.5 t", "field 'pid': unknown passage 'zzz' (not in the corpus)"),
    ("q9 Q0 a 1 0.5 t", "field 'qid': unknown query 'q9' (not in the dataset)"),
    ("q1 Q0 a 2 0.5 t", "field 'pid': passage 'a' listed twice for query 'q1'"),
    ("q1 Q0 b 2 high t", "field 'score': score 'high' is not a number"),
    ("q1 b 2 0.5", ": expected 6 columns 'qid Q0 pid rank score tag', got 4"),
])
def test_trec_errors_name_file_line_and_field(tmp_path, second, expected):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 0.9 t\n" + second + "\n")
    with pytest.raises(InputError) as error:
        read_run(path, qids=QIDS, pids=PIDS)
    sep = "" if expected.startswith(":") else " "
    assert str(error.value) == f"{path}:2{sep}{expected}"


@pytest.mark.parametrize(("line", "expected"), [
    ('{"qid": "q1", "ranking": ["a", "nope"]}', "field 'pid': unknown passage 'nope' (not in the corpus)"),
    ('{"qid": "q1"}', "field 'ranking': needs 'ranking' (list of pids) or 'scores' ({pid: score})"),
    ('{"qid": "q1", "scores": {"a": "x"}}', "field 'scores': scores must map passage ids to numbers"),
    ('{"ranking": ["a"]}', "field 'qid': missing or non-string qid"),
])
def test_jsonl_errors(tmp_path, line, expected):
    path = tmp_path / "run.jsonl"
    path.write_text('{"qid": "q2", "ranking": ["a"]}\n' + line + "\n")
    with pytest.raises(InputError) as error:
        read_run(path, qids=QIDS, pids=PIDS)
    assert str(error.value) == f"{path}:2 {expected}"
