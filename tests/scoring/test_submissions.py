"""Reading submissions: kinds, normalisation, and the fast path agreeing with the schemas."""

from __future__ import annotations

import json

import pytest

from labeler.artifacts import schema_problems
from labeler.errors import InputError, UnknownNameError
from labeler.scoring.submissions import _FAST, read_submission

# Records near the edges of each schema: the fast path may refuse a valid one (the schema
# then decides), but must never accept one the schema refuses. Rankings: tests/test_formats.py.
EDGES = {
    "selection": [
        {"qid": "1", "selected": []}, {"qid": "1", "selected": ["a", "a"]},
        {"qid": "1", "selected": [""]}, {"qid": "", "selected": []},
        {"qid": 1, "selected": [2]}, {"qid": True, "selected": []},
        {"qid": "1", "selected": [None]}, {"qid": "1", "selected": "a"},
        {"qid": "1", "selected": [["a"]]}, {"qid": "1"},
    ],
    "extraction": [
        {"qid": "1", "evidence": ""}, {"qid": "1", "evidence": "text"},
        {"qid": "1", "evidence": None}, {"qid": "1", "evidence": ["text"]},
        {"qid": 3, "evidence": "x"}, {"qid": 3.5, "evidence": "x"},
    ],
}


@pytest.mark.parametrize("kind", sorted(EDGES))
def test_fast_path_accepts_only_what_the_schema_accepts(kind):
    accepted = 0
    for record in EDGES[kind]:
        if _FAST[kind](record) is not None:
            accepted += 1
            assert schema_problems(record, f"submission-{kind}") == [], record
    assert accepted >= 2


def _write(tmp_path, lines, name="sub.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_kinds_and_normalised_entries(tmp_path):
    ranking = read_submission(_write(tmp_path, [
        {"qid": "1", "ranking": ["28", "35", "9"]},  # best first: scores 3, 2, 1
        {"qid": 2, "ranking": [29, 68]},  # integer ids become strings (schema path)
        {"qid": "3", "scores": {"60": 1.5, "61": -2}},
    ]))
    assert ranking.kind == "ranking"
    assert ranking.entries == {"1": {"28": 3.0, "35": 2.0, "9": 1.0},
                               "2": {"29": 2.0, "68": 1.0}, "3": {"60": 1.5, "61": -2}}
    selection = read_submission(_write(tmp_path, [{"qid": 5, "selected": [1, "x"]}]))
    assert selection.kind == "selection" and selection.entries == {"5": ["1", "x"]}
    extraction = read_submission(_write(tmp_path, [{"qid": "1", "evidence": "e", "note": 1}]))
    assert extraction.kind == "extraction" and extraction.entries == {"1": "e"}


def test_forced_kind_ignores_other_kinds_fields(tmp_path):
    path = _write(tmp_path, [{"qid": "1", "selected": ["a"], "evidence": "a"}])
    assert read_submission(path, kind="extraction").entries == {"1": "a"}
    with pytest.raises(InputError, match="ambiguous record: fields of selection and extraction"):
        read_submission(path)
    with pytest.raises(UnknownNameError, match="Did you mean 'ranking'"):
        read_submission(path, kind="rankings")


def test_trec_run(tmp_path):
    path = _write(tmp_path, ["1 Q0 28 1 2.5 bm25", "2 Q0 29 1 1 bm25", "1 Q0 35 2 2.5 bm25"])
    sub = read_submission(path, known={"1", "2"})
    assert sub.kind == "ranking" and sub.entries == {"1": {"28": 2.5, "35": 2.5}, "2": {"29": 1.0}}
    with pytest.raises(InputError, match="sub.jsonl:2 field 'qid': unknown qid '2'"):
        read_submission(path, known={"1"})
    lenient = read_submission(path, known={"1"}, lenient=True)
    assert list(lenient.entries) == ["1"] and len(lenient.skipped) == 1


def test_lenient_with_nothing_left(tmp_path):
    path = _write(tmp_path, ["{oops", "[]"])
    with pytest.raises(InputError, match=r"no valid records \(2 bad lines skipped\)"):
        read_submission(path, lenient=True)
