"""`--answer-extractor`: entity answers from MS MARCO's sentence answers, before labelling.

Queries are real MS MARCO v1.1 dev QA records with sentence answers and their selected
passages (tests/fixtures/msmarco_qa_sentences*.jsonl, from ../shared/data/msmarco_qa; see
tests/fixtures/README.md). Parsing and batching run on the scripted backend; one build runs the
real SmolLM2 as both extractor and labeller.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.scripted import ScriptedBackend

from labeler.cli import cli
from labeler.errors import InputError
from labeler.llm import resolve_model
from labeler.llm.cache import CachedBackend
from labeler.llm.calls import Calls
from labeler.sources import answer_extraction
from labeler.sources.answer_extraction import extract_answers, parse_answer
from labeler.sources.corpus import Corpus
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _msmarco() -> Source:
    """The fixture records as the msmarco-fqa adapter makes them: gold = selected passages."""
    passages = {r["doc_id"]: Passage(r["doc_id"], "", r["contents"]) for r in map(
        json.loads, (FIXTURES / "msmarco_qa_sentences_corpus.jsonl").open(encoding="utf-8"))}
    queries = [Query(str(r["qid"]), r["query"], r["generation_gt"],
                     [passages[pid] for group in r["retrieval_gt"] for pid in group])
               for r in map(json.loads, (FIXTURES / "msmarco_qa_sentences.jsonl").open(
                   encoding="utf-8"))]
    return Source("msmarco-fqa", "r", queries, Corpus(list(passages.values())), license="other",
                  sentence_answers=True)


@pytest.mark.parametrize(("output", "entity"), [
    (" Pacific County, Washington\n", "Pacific County, Washington"),
    ("Short answer: Shandong Province.", "Shandong Province"),
    ('"Eastern Russia"', "Eastern Russia"),
    ("<think>\nthe county\n</think>\n\nPacific County", "Pacific County"),
    ("\n\nEastern Russia\nIt is found near the Amur River.", "Eastern Russia"),
    ("  \n", ""),
])
def test_parse_answer(output, entity):
    assert parse_answer(output) == entity


def test_one_batch_one_request_per_sentence_and_the_entities_replace_the_sentences():
    def extract(text: str) -> str:
        answers = {"South Bend": " Pacific County\n", "Weihai (Chinese": "Shandong province.",
                   "Located near": "Shandong province", "In eastern Russia": "  "}
        return next(entity for start, entity in answers.items() if f"Answer: {start}" in text)

    llm = ScriptedBackend(answer=extract)
    queries = _msmarco().queries
    amur, weihai, south_bend = extract_answers(Calls(llm), queries)
    (batch,) = llm.batches("generate")
    assert len(batch) == 4  # Weihai has two sentence answers
    assert batch[3][-1].content == (
        "Question: where is south bend washington\n"
        "Answer: South Bend is a city in Pacific County, Washington, United States.\n\n"
        "The answer above is a sentence. Extract from it the short answer to the question: only "
        "the entity, name, place, date or number, copied from the answer, without explanation.\n"
        "Short answer:")
    assert south_bend.answers == ["Pacific County"]
    assert weihai.answers == ["Shandong province"]  # both sentences give it: once
    assert amur.answers == queries[0].answers  # an empty extraction keeps the sentence
    assert south_bend.gold == queries[2].gold and south_bend.qid == "674"


def test_sentence_answers_need_an_extractor_and_only_they_take_one():
    with pytest.raises(InputError) as error:
        answer_extraction.check(_msmarco(), None)
    assert error.value.line() == (
        "field 'answer_extractor': the answers of 'msmarco-fqa' are sentences, which a short "
        "answer never matches (pass --answer-extractor MODEL to extract entity answers first "
        "(the paper used qwen3-32b))")
    answer_extraction.check(_msmarco(), "qwen3-32b")
    nq = Source("nq-sample", "r", [], None)
    with pytest.raises(InputError, match="applies to datasets with sentence answers"):
        answer_extraction.check(nq, "qwen3-32b")


def test_an_extractor_for_a_dataset_without_sentence_answers_fails_before_any_model_loads(
        tmp_path):
    result = CliRunner().invoke(cli, ["build", "--dataset", "nq-sample", "--llm", "smollm2-135m",
                                      "--answer-extractor", "smollm2-135m",
                                      "--out", str(tmp_path)])
    assert isinstance(result.exception, InputError)  # not a model load error: none was tried
    assert result.exception.line() == (
        "field 'answer_extractor': --answer-extractor applies to datasets with sentence answers "
        "(msmarco-fqa), not 'nq-sample' (leave it out)")


def test_build_extracts_with_smollm_then_labels_and_records_the_prompt(tmp_path, smollm,
                                                                       monkeypatch):
    import labeler.llm
    import labeler.workflows.steps

    real = labeler.llm.load_backend

    def load(name, **options):  # the session's SmolLM2 behind the real call cache
        if resolve_model(name).model_id != smollm.model_id:
            return real(name, **options)
        return CachedBackend(smollm, cache_dir=options.get("cache_dir"))

    monkeypatch.setattr(labeler.llm, "load_backend", load)
    monkeypatch.setattr(labeler.workflows.steps, "load_source", lambda *a, **k: _msmarco())
    args = ["build", "--dataset", "msmarco-fqa", "--llm", "smollm2-135m", "--pool", "hgp",
            "--answer-extractor", "smollm2-135m", "--out", str(tmp_path / "out"),
            "--cache-dir", str(tmp_path / "calls")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "utility" / "msmarco-fqa" / "smollm2-135m" / "v1"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["prompt_templates"]["answer_extraction"]["text"] == (
        answer_extraction.EXTRACT_ANSWER)
    assert manifest["sampling"]["answer_extraction"]["max_tokens"] == 32
    assert manifest["answer_extraction"]["model"] == manifest["model_id"]
    assert manifest["config"]["answer_extractor"] == "smollm2-135m"
    records = [json.loads(line) for p in sorted(folder.glob("*.jsonl"))
               for line in p.read_text().splitlines()]
    sentences = {q.qid: q.answers for q in _msmarco().queries}
    assert [r["qid"] for r in records] == ["8", "486", "674"]
    # the labels were computed against what SmolLM2 extracted, not against the sentences
    assert any(r["answers"] != sentences[r["qid"]] for r in records)
    assert all(r["answers"] and all(a.strip() for a in r["answers"]) for r in records)
