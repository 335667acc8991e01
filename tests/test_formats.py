"""labeler.lines and labeler.formats: JSONL lines, runs and qrels, read by every caller alike
(BOM, CRLF, errors).

Fixtures are real files: CISI qrels (tests/scoring/fixtures), a MiniLM TREC run over nq-sample,
FlashRAG NQ questions and corpus lines, a utility artifact (tests/fixtures, see README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from labeler.artifacts import schema_problems
from labeler.errors import InputError, UnknownNameError
from labeler.formats import Qrels, Run, _fast_ranking
from labeler.lines import jsonl_lines, read_jsonl
from labeler.scoring.reference import load_reference
from labeler.scoring.score import score
from labeler.scoring.submissions import read_submission
from labeler.sources.registry import load_source

TESTS = Path(__file__).parent
QRELS = TESTS / "scoring" / "fixtures" / "cisi.qrels"  # 3114 CISI judgments, all label 1
ARTIFACT_DATA = TESTS / "scoring" / "fixtures" / "utility-v1" / "data-00000.jsonl"  # 6 utility records
TREC_RUN = TESTS / "fixtures" / "nq_sample_minilm_top3.trec"  # 3 nq-sample queries x top 3
DATASET = TESTS / "fixtures" / "flashrag_nq_test.jsonl"  # 17 NQ questions, FlashRAG layout
CORPUS = TESTS / "fixtures" / "flashrag_corpus.jsonl"  # 40 DPR-wiki passages

BOM = b"\xef\xbb\xbf"


def _bom_crlf(source: Path, target: Path) -> Path:
    """`source` as Windows Notepad saves it: a UTF-8 byte-order mark, CRLF line ends."""
    target.write_bytes(BOM + source.read_bytes().replace(b"\n", b"\r\n"))
    return target


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# JSONL lines ---------------------------------------------------------------------------------

GOOD = '{"qid": "1", "selected": ["28"]}'


@pytest.mark.parametrize(("bad", "problem"), [
    (b'\xff{"qid": "2"}', "not UTF-8: invalid start byte at byte 0"),
    (b'{"qid": "2",',
     "invalid JSON: Expecting property name enclosed in double quotes (column 13)"),
    (b'{"qid": "2"} {}', "invalid JSON: Extra data (column 14)"),
    (b"", "empty line"),
    (b"  \t", "empty line"),
    (b'["2", "28"]', "expected a JSON object, got list"),
    (b'"2"', "expected a JSON object, got str"),
    (b'{"qid": "2", "scores": {"28": NaN}}', "invalid JSON: NaN is not a JSON value"),
    (b'{"qid": "2", "scores": {"28": -Infinity}}', "invalid JSON: -Infinity is not a JSON value"),
])
def test_each_kind_of_bad_line_is_named_with_file_and_line(tmp_path, bad, problem):
    path = tmp_path / "lines.jsonl"
    path.write_bytes(GOOD.encode() + b"\r\n" + bad + b"\r\n" + GOOD.encode() + b"\r\n")
    # collecting: the bad line is reported in its place and reading goes on past it
    assert list(jsonl_lines(path)) == [(1, json.loads(GOOD), None), (2, None, problem),
                                       (3, json.loads(GOOD), None)]
    # failing: the first bad line raises, at file:line
    with pytest.raises(InputError) as error:
        list(read_jsonl(path))
    assert str(error.value) == f"{path}:2: {problem}"


def test_blank_lines_are_skipped_only_when_asked(tmp_path):
    path = _write(tmp_path / "d.jsonl", [GOOD, "", GOOD.replace('"1"', '"3"')])
    assert [n for n, _ in read_jsonl(path, skip_blank=True)] == [1, 3]
    assert [p for _, _, p in jsonl_lines(path)] == [None, "empty line", None]


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(InputError) as error:
        list(read_jsonl(tmp_path / "gone.jsonl"))
    assert str(error.value) == f"{tmp_path / 'gone.jsonl'}: no such file"


def test_bom_and_crlf_jsonl_dataset_and_corpus_read_as_the_originals(tmp_path):
    dataset = _bom_crlf(DATASET, tmp_path / "nq.jsonl")
    corpus = _bom_crlf(CORPUS, tmp_path / "corpus.jsonl")
    plain = load_source(f"jsonl:{DATASET}", corpus=CORPUS)
    marked = load_source(f"jsonl:{dataset}", corpus=corpus)
    assert len(marked.queries) == 17 and marked.queries[0].qid == "test_0"  # no mark kept
    assert marked.queries == plain.queries
    assert list(marked.corpus.passages) == list(plain.corpus.passages) and len(marked.corpus) == 40
    # the last field of each line keeps no "\r": answers and passage texts are the same
    assert marked.queries[0].answers == ["Wilhelm Conrad Röntgen"]


def test_bom_and_crlf_artifact_is_read_as_an_artifact_reference(tmp_path):
    data = _bom_crlf(ARTIFACT_DATA, tmp_path / "data.jsonl")  # a bare file, no manifest here
    plain, marked = load_reference(ARTIFACT_DATA), load_reference(data)
    assert marked.qids == plain.qids and marked.qids[0] == "nq-open-dev-oracle-0"
    assert (marked.qrels, marked.gold) == (plain.qrels, plain.gold)


# Runs ----------------------------------------------------------------------------------------

Q0 = "nq-open-dev-oracle-0"


def test_trec_run_with_bom_and_crlf_reads_as_the_original(tmp_path):
    run = Run.from_file(TREC_RUN)
    assert list(run) == [Q0, "nq-open-dev-oracle-1", "nq-open-dev-oracle-2"]
    assert run.ranking(Q0) == [("nq-oracle:64aaafc597c5", 0.725688), ("flashrag:314", 0.446553),
                               ("nq-oracle:5105ad9ebfe5", 0.415747)]
    assert Run.from_file(_bom_crlf(TREC_RUN, tmp_path / "run.trec")) == run


@pytest.mark.parametrize("format", ["trec", "jsonl"])
def test_run_round_trips_through_save_and_from_file(tmp_path, format):
    run = Run.from_file(TREC_RUN)
    run["q-extra"] = {"d1": 0.1 + 0.2, "d2": 1 / 3, "d3": -2.0}  # scores that 6 decimals round
    path = run.save(tmp_path / "out" / f"run.{format}", format=format, tag="t")
    again = Run.from_file(path)
    assert again == run
    assert [again.ranking(q) for q in again] == [run.ranking(q) for q in run]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left
    if format == "trec":
        assert path.read_text().splitlines()[0] == f"{Q0} Q0 nq-oracle:64aaafc597c5 1 0.725688 t"
    else:
        assert json.loads(path.read_text().splitlines()[-1]) == {
            "qid": "q-extra", "scores": {"d1": 0.30000000000000004, "d2": 1 / 3, "d3": -2.0}}


def test_unknown_save_format(tmp_path):
    with pytest.raises(UnknownNameError, match="unknown run format 'tsv'.*Available: trec, jsonl"):
        Run({"q": {"d": 1.0}}).save(tmp_path / "run.tsv", format="tsv")
    assert list(tmp_path.iterdir()) == []


def test_jsonl_runs_with_a_ranking_or_scores_and_ties_in_the_order_read(tmp_path):
    path = _write(tmp_path / "run.jsonl", [
        '{"qid": "q1", "ranking": ["c", "a", "b"]}',  # best first: scored 3, 2, 1
        '{"qid": 2, "scores": {"a": 0.5, "b": 0.9, "c": 0.5}}',  # an integer qid becomes "2"
    ])
    run = Run.from_file(_bom_crlf(path, tmp_path / "marked.jsonl"))
    assert run == {"q1": {"c": 3.0, "a": 2.0, "b": 1.0}, "2": {"a": 0.5, "b": 0.9, "c": 0.5}}
    assert run.ranking("2") == [("b", 0.9), ("a", 0.5), ("c", 0.5)]
    assert run.ranking("absent") == []


QIDS, DOCIDS = {"q1", "q2"}, {"a", "b", "c"}


@pytest.mark.parametrize(("second", "expected"), [
    ("q1 Q0 zzz 2 0.5 t", "field 'pid': unknown passage 'zzz' (not in the corpus)"),
    ("q9 Q0 a 1 0.5 t", "field 'qid': unknown qid 'q9'"),
    ("q1 Q0 a 2 0.5 t", "field 'docid': duplicate docid 'a' for qid 'q1'"),
    ("q1 Q0 b 2 high t", "field 'score': score 'high' is not a number"),
    ("q1 Q0 b 2 -inf t", "field 'score': score -inf is not a finite number"),
    ("q1 b 2 0.5", ": a TREC run line has 6 fields (qid Q0 docid rank score tag), got 4"),
])
def test_trec_run_errors_name_file_line_and_field(tmp_path, second, expected):
    path = _write(tmp_path / "run.trec", ["q1 Q0 a 1 0.9 t", second])
    with pytest.raises(InputError) as error:
        Run.from_file(path, qids=QIDS, docids=DOCIDS)
    sep = "" if expected.startswith(":") else " "
    assert str(error.value) == f"{path}:2{sep}{expected}"


@pytest.mark.parametrize(("second", "expected"), [
    ('{"qid": "q1", "ranking": ["a", "nope"]}',
     " field 'pid': unknown passage 'nope' (not in the corpus)"),
    ('{"qid": "q2", "scores": {"b": 1}}', " field 'qid': duplicate qid 'q2' (first on line 1)"),
    ('{"qid": "q1"}',
     ": not a ranking record: expected {qid, ranking} or {qid, scores}, got fields qid"),
    ('{"qid": "q1", "scores": {"a": "x"}}', " field 'scores.a': 'x' is not of type 'number'"),
    ('{"qid": "q1", "scores": {"a": 1e999}}',
     " field 'scores.a': score inf is not a finite number"),
    ('{"ranking": ["a"]}', " field 'qid': 'qid' is a required property"),
    ('{"qid": "q1", "ranking": ["a", "b"], "scores": {}}',
     ": give either 'ranking' or 'scores', not both"),
    ('{"qid": "q1", "ranking": ["1", 1]}', " field 'ranking': duplicate passage ids"),
])
def test_jsonl_run_errors_name_file_line_and_field(tmp_path, second, expected):
    path = _write(tmp_path / "run.jsonl", ['{"qid": "q2", "ranking": ["a"]}', second])
    with pytest.raises(InputError) as error:
        Run.from_file(path, qids=QIDS, docids=DOCIDS | {"1"})
    assert str(error.value) == f"{path}:2{expected}"


def test_problems_are_collected_instead_of_raised(tmp_path):
    path = _write(tmp_path / "run.trec", ["q1 Q0 a 1 0.9 t", "q1 Q0 b 2 x t", "q9 Q0 a 1 1 t",
                                          "q1 Q0 c 3 0.1 t"])
    problems: list[InputError] = []
    run = Run.from_file(path, qids=QIDS, problems=problems)
    assert run == {"q1": {"a": 0.9, "c": 0.1}}
    assert [e.line() for e in problems] == [f"{path}:2 field 'score': score 'x' is not a number",
                                            f"{path}:3 field 'qid': unknown qid 'q9'"]


def test_a_run_line_that_is_not_utf8_is_a_problem_at_its_line_the_others_read(tmp_path):
    path = tmp_path / "run.trec"  # decoded as read, so line 3's bytes fail after line 2 ends
    path.write_bytes(b"q1 Q0 a 1 0.9 t\nq1 Q0 b 2 x t\nq1 Q0 \xff 3 0.5 t\nq2 Q0 c 1 0.1 t\n")
    problems: list[InputError] = []
    run = Run.from_file(path, qids=QIDS, problems=problems)
    assert run == {"q1": {"a": 0.9}, "q2": {"c": 0.1}}
    assert [e.line() for e in problems] == [
        f"{path}:2 field 'score': score 'x' is not a number",
        f"{path}:3: not UTF-8: invalid start byte at byte 6"]


# Near the edges of submission-ranking.schema.json: the fast path may refuse a valid line (the
# schema then decides), but must never accept one the schema refuses.
RANKING_EDGES = [
    {"qid": "1", "ranking": ["a", "b"]}, {"qid": "1", "ranking": ["a", "a"]},
    {"qid": "1", "ranking": []}, {"qid": "1", "ranking": [""]},
    {"qid": "1", "scores": {"a": 1, "b": 0.5}}, {"qid": "1", "scores": {"a": True}},
    {"qid": "1", "scores": {"a": "1"}}, {"qid": "1", "scores": {"": 1.0}},
    {"qid": "1", "scores": {"a": None}}, {"qid": "1", "scores": []},
    {"qid": "1", "scores": {"a": 1e308, "b": 1e308}}, {"qid": "1", "scores": {}},
    {"qid": "1", "ranking": ["a"], "scores": {"a": 1}}, {"qid": 7, "ranking": [1, 2]},
]


def test_ranking_fast_path_accepts_only_what_the_schema_accepts():
    accepted = [r for r in RANKING_EDGES if _fast_ranking(r) is not None]
    assert all(schema_problems(r, "submission-ranking") == [] for r in accepted), accepted
    assert len(accepted) >= 2


# Qrels ---------------------------------------------------------------------------------------


def test_qrels_with_bom_and_crlf_read_as_the_original_and_round_trip(tmp_path):
    qrels = Qrels.from_file(QRELS)
    assert sum(map(len, qrels.values())) == 3114 and list(qrels)[:2] == ["1", "2"]
    assert qrels["1"]["28"] == 1
    assert Qrels.from_file(_bom_crlf(QRELS, tmp_path / "cisi.qrels")) == qrels
    graded = Qrels({**qrels, "x": {"d1": 3, "d2": 0, "d3": -1}})
    assert Qrels.from_file(graded.save(tmp_path / "out.qrels")) == graded


@pytest.mark.parametrize(("second", "expected"), [
    ("1 0 35", ": a qrels line has 4 fields (qid iter docid label), got 3"),
    ("1 0 35 yes", " field 'label': label 'yes' is not an integer"),
    ("1 0 28 0", ": duplicate judgment of '28' for qid '1'"),
    ("1 0 \xe9 1", ": not UTF-8: invalid continuation byte at byte 4"),
])
def test_qrels_errors_name_file_line_and_field(tmp_path, second, expected):
    path = tmp_path / "bad.qrels"
    path.write_bytes(f"1 0 28 1\n{second}\n".encode("latin-1"))
    with pytest.raises(InputError) as error:
        Qrels.from_file(path)
    assert str(error.value) == f"{path}:2{expected}"


def _cisi_ranking(path: Path) -> Path:
    """A ranking of the first 20 CISI queries: half their judged documents, then unjudged ones."""
    lines = []
    for qid, judged in list(Qrels.from_file(QRELS).items())[:20]:
        docs = sorted(judged)[::2] + [str(1500 + i) for i in range(5)]
        lines.append(json.dumps({"qid": qid, "ranking": docs[::-1]}))
    return _write(path, lines)


def test_a_qrels_file_with_a_bom_scores_like_the_original(tmp_path):
    sub = _cisi_ranking(tmp_path / "sub.jsonl")
    plain = score(sub, QRELS)
    marked = score(sub, _bom_crlf(QRELS, tmp_path / "cisi.qrels"))
    assert plain.summary["ndcg@10"] > 0  # the comparison is not between two zeros
    assert marked.qids == plain.qids and marked.missing == plain.missing
    assert marked.summary == plain.summary
    assert all(np.array_equal(marked.per_query[m], plain.per_query[m]) for m in plain.per_query)


def test_bom_and_crlf_submissions_read_as_the_originals(tmp_path):
    jsonl = _cisi_ranking(tmp_path / "sub.jsonl")
    marked = read_submission(_bom_crlf(jsonl, tmp_path / "marked.jsonl"))
    assert marked.kind == "ranking" and marked.entries == read_submission(jsonl).entries
    trec = read_submission(_bom_crlf(TREC_RUN, tmp_path / "run.trec"))
    assert trec.kind == "ranking" and trec.entries == Run.from_file(TREC_RUN)
