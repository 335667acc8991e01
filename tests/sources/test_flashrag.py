"""`jsonl:PATH` datasets and `--corpus` files in FlashRAG format, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeler.errors import InputError
from labeler.sources.registry import load_source

FIXTURES = Path(__file__).parent.parent / "fixtures"
DATASET = FIXTURES / "flashrag_nq_test.jsonl"
CORPUS = FIXTURES / "flashrag_corpus.jsonl"


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_dataset_with_a_corpus():
    source = load_source(f"jsonl:{DATASET}", corpus=CORPUS, limit=5)
    assert source.name == f"jsonl:{DATASET}"
    assert [q.qid for q in source.queries] == ["test_0", "test_1", "test_2", "test_3", "test_4"]
    assert source.queries[0].answers == ["Wilhelm Conrad Röntgen"]
    assert len(source.corpus) == 40
    first = source.corpus["0"]  # contents "\"Evan Morris\"\nEvan Morris Evan L. Morris ..."
    assert first.title == "Evan Morris" and first.text.startswith("Evan Morris Evan L. Morris")
    assert "+corpus:" in source.revision  # the corpus is pinned with the dataset


def test_a_jsonl_file_has_an_unknown_licence_whatever_its_name(tmp_path):
    path = tmp_path / "nq-mine.jsonl"  # named after NQ, but nobody has said what it is
    path.write_bytes(DATASET.read_bytes())
    assert load_source(f"jsonl:{path}", limit=1).license == "unknown"


def test_gold_passages_in_either_form(tmp_path):
    path = _write(tmp_path / "d.jsonl", [json.dumps({
        "id": "q1", "question": "who wrote hamlet", "golden_answers": ["Shakespeare"],
        "gold_passages": [{"id": "p1", "contents": "\"Hamlet\"\nHamlet is a tragedy by Shakespeare."},
                          {"id": "p2", "title": "Shakespeare", "text": "An English playwright."}]})])
    (query,) = load_source(f"jsonl:{path}").queries
    assert [(p.pid, p.title, p.text) for p in query.gold] == [
        ("p1", "Hamlet", "Hamlet is a tragedy by Shakespeare."),
        ("p2", "Shakespeare", "An English playwright.")]


@pytest.mark.parametrize(("line", "expected"), [
    ('{"id": "q2", "golden_answers": ["x"]}', "field 'question': missing or empty question"),
    ('{"id": "q2", "question": "q?", "golden_answers": []}',
     "field 'golden_answers': golden_answers must be a non-empty list of strings"),
    ('{"question": "q?", "golden_answers": ["x"]}', "field 'id': missing or empty id"),
    ('{"id": "q2", "question": "q?", "golden_answers": ["x"], "gold_passages": [{"id": "p"}]}',
     "field 'gold_passages': each gold passage needs contents, or title and text"),
    ('{"id": "q2", "question": ', "invalid JSON: Expecting value (column 26)"),
    ('["q2", "q?"]', "expected a JSON object, got list"),
])
def test_a_bad_dataset_line_names_file_line_and_field(tmp_path, line, expected):
    good = json.dumps({"id": "q1", "question": "who?", "golden_answers": ["x"]})
    path = _write(tmp_path / "d.jsonl", [good, line])
    with pytest.raises(InputError) as error:
        load_source(f"jsonl:{path}")
    sep = " " if expected.startswith("field") else ": "
    assert str(error.value) == f"{path}:2{sep}{expected}"


@pytest.mark.parametrize(("line", "expected"), [
    ('{"id": "0", "contents": "\\"T\\"\\nagain"}', "field 'id': duplicate passage id '0'"),
    ('{"id": "1"}', "field 'contents': missing or non-string contents"),
])
def test_a_bad_corpus_line_fails_before_the_dataset_loads(tmp_path, line, expected):
    path = _write(tmp_path / "c.jsonl", ['{"id": "0", "contents": "\\"T\\"\\ntext"}', line])
    with pytest.raises(InputError) as error:
        load_source("nq", corpus=path)  # the corpus is read before any Hub access
    assert str(error.value) == f"{path}:2 {expected}"


def test_missing_files(tmp_path):
    with pytest.raises(InputError) as error:
        load_source(f"jsonl:{DATASET}", corpus=tmp_path / "nope.jsonl")
    assert str(error.value) == f"{tmp_path / 'nope.jsonl'}: no such file"
    with pytest.raises(InputError) as error:
        load_source(f"jsonl:{tmp_path / 'gone.jsonl'}")
    assert str(error.value) == f"{tmp_path / 'gone.jsonl'}: no such file"
