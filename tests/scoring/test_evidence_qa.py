"""`labeler score --rag` on an extraction: SEER's Table 1 (Zero, Full, the artifact's rank-1
extraction, the submission) with a scripted generator, against the real SEER and utility
fixtures (fixtures/README.md): the arithmetic of EM, F1 and tokens, one batched call, the
table's layout, and bad input failing before any model loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.nq2 import copy_nq2_build
from support.scripted import ScriptedBackend

import labeler.llm
from labeler.cli import cli
from labeler.errors import InputError
from labeler.llm.calls import Calls
from labeler.scoring.evidence_qa import (
    QASetting,
    qa_metric,
    qa_setting,
    qa_table,
)
from labeler.tasks.seer import SeerTask
from labeler.tasks.utility import ANSWER

FIXTURES = Path(__file__).parent / "fixtures"
SEER = FIXTURES / "seer-v1"  # 2 nq-sample queries, 2 passages each, 2 and 3 ranked extractions
UTILITY = FIXTURES / "utility-v1"  # 6 nq-sample queries, 3 to 5 candidates each
Q0, Q1 = "nq-open-dev-oracle-0", "nq-open-dev-oracle-1"


def _reader(text: str) -> str:
    """The scripted generator: a gold answer of the SEER fixture it reads in the prompt (the
    Röntgen one in a sentence, so F1 differs from EM), else a refusal."""
    for found, answer in (("Wilhelm Conrad Röntgen", "It was Wilhelm Conrad Röntgen, in 1901"),
                          ("May 18, 2018", "May 18, 2018")):
        if found in text:
            return answer
    return "I do not know"


@pytest.fixture
def scripted(monkeypatch) -> ScriptedBackend:
    """Every model `labeler score` loads is this scripted generator."""
    backend = ScriptedBackend(answer=_reader)
    monkeypatch.setattr(labeler.llm, "load_backend", lambda *a, **k: backend)
    return backend


@pytest.fixture
def unloadable(monkeypatch) -> None:
    """Loading any model fails the test: bad input must fail before."""
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(labeler.llm, "load_backend", refuse)


def _records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "data-00000.jsonl").open()]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _copy(folder: Path, tmp_path: Path, **manifest) -> Path:
    """A copy of a fixture artifact with manifest keys changed (its data files untouched)."""
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    data = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**data, **manifest}))
    return copy


def _score(*args) -> dict:
    result = CliRunner().invoke(cli, ["score", *map(str, args), "--json"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return json.loads(result.stdout)


def test_metric_follows_the_dataset():
    assert qa_metric({"dataset": "nq-sample", "source_dataset": "nq-sample"}) == "em"
    assert qa_metric({"dataset": "tq"}) == "em"
    for name in ("hotpotqa", "hotpotqa-distractor", "hotpotqa-train", "jsonl:hotpot_train.jsonl"):
        assert qa_metric({"dataset": "x", "source_dataset": name}) == "f1", name


def test_table_one_by_hand_in_one_batched_call():
    """Zero, Full, the rank-1 extraction and a submission over the SEER fixture's two
    queries, by the scripted generator's rule; a blank evidence is asked closed-book and a
    missing one not at all."""
    records = _records(SEER)
    backend = ScriptedBackend(answer=_reader)
    given = ["", "Deadpool 2 comes out on May 18, 2018."]  # q0 blank, q1 has the answer
    absent = [None, "May 18, 2018"]  # q0 not submitted
    rows = qa_table(Calls(backend), records, QASetting(SeerTask, "question", ANSWER, "em"),
                    [("mine", given), ("partial", absent)])

    assert [r.method for r in rows] == ["Zero", "Full", "artifact", "mine", "partial"]
    em = {r.method: r.scores.tolist() for r in rows}
    # Full: each query's passages hold its answer; rank-1 extractions: q0's holds Röntgen,
    # q1's is cut at "May 18," (answer "I do not know")
    assert em == {"Zero": [0, 0], "Full": [1, 1], "artifact": [1, 0], "mine": [0, 1],
                  "partial": [0, 1]}
    words = [[len(f"{c['title']} {c['text']}".split()) for c in r["candidates"]]
             for r in records]
    tokens = {r.method: r.tokens.tolist() for r in rows}
    assert tokens["Zero"] == [0, 0] and tokens["Full"] == [sum(w) for w in words]
    assert tokens["artifact"] == [len(SeerTask.best_evidence(r).split()) for r in records]
    assert tokens["mine"] == [0, 8] and tokens["partial"] == [0, 3]
    # one generate call of the distinct prompts: mine's blank q0 is Zero's q0, partial's
    # missing q0 is not asked
    (batch,) = backend.batches("generate")
    assert len(batch) == 2 + 2 + 2 + 1 + 1  # Zero, Full, artifact, mine q1, partial q1
    assert SeerTask.best_evidence(records[0]) == next(
        e["text"] for e in records[0]["extractions"] if e["rank"] == 1)


def test_hotpotqa_is_scored_by_f1():
    records = _records(SEER)
    rows = qa_table(Calls(ScriptedBackend(answer=_reader)), records,
                    QASetting(SeerTask, "question", ANSWER, "f1"), [])
    full = next(r for r in rows if r.method == "Full")
    # "it was wilhelm conrad röntgen in 1901" against "wilhelm conrad röntgen": P 3/7, R 1,
    # F1 = 2PR/(P+R) = 0.6; q1 exact
    assert full.scores.tolist() == pytest.approx([0.6, 1.0])


def test_cli_prints_table_one_against_a_seer_artifact(tmp_path, scripted):
    records = _records(SEER)
    evidence = _write(tmp_path / "evidence.jsonl", [
        {"qid": Q0, "evidence": records[0]["candidates"][0]["text"]},
        {"qid": Q1, "evidence": "no date here"}])
    baseline = _write(tmp_path / "base.jsonl", [{"qid": Q1, "evidence": "May 18, 2018"}])
    result = CliRunner().invoke(cli, ["score", str(evidence), "--against", str(SEER), "--rag",
                                      "--baseline", str(baseline)])
    assert result.exit_code == 0, result.output
    assert "SEER's Table 1 layout: EM (%), 2 queries" in result.stdout
    header = next(line for line in result.stdout.splitlines() if "┃ method" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == ["method", "evidence", "EM",
                                                                  "Tok"]
    cells = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[3:5]]
             for line in result.stdout.splitlines() if line.startswith("│ ")
             and line.count("│") == 5}
    full_tokens = sum(len(f"{c['title']} {c['text']}".split())
                      for r in records for c in r["candidates"]) / 2
    assert cells["Zero"] == ["0.00", "0.0"]
    assert cells["Full"] == ["100.00", f"{full_tokens:.1f}"]
    assert cells["artifact"][0] == "50.00"
    assert cells["evidence"] == ["50.00", f"{(len(records[0]['candidates'][0]['text'].split()) + 3) / 2:.1f}"]
    assert cells["base"] == ["50.00", "1.5"]  # q0 missing: 0, and 0 tokens

    report = _score(evidence, "--against", SEER, "--rag", "--baseline", baseline)
    assert report["qa"]["metric"] == "em" and report["qa"]["queries"] == 2
    assert [row["method"] for row in report["qa"]["rows"]] == ["Zero", "Full", "artifact",
                                                               "evidence", "base"]
    assert report["metrics"]["rag_em"] == 0.5 == report["baseline"]["metrics"]["rag_em"]
    assert report["baseline"]["tests"]["rag_em"]["n"] == 2


def test_cli_against_a_utility_artifact_has_no_artifact_row_and_f1_on_hotpotqa(tmp_path,
                                                                                  scripted):
    records = _records(UTILITY)
    evidence = _write(tmp_path / "ev.jsonl", [{"qid": r["qid"], "evidence": r["answers"][0]}
                                             for r in records])
    report = _score(evidence, "--against", UTILITY, "--rag")
    rows = {row["method"]: row for row in report["qa"]["rows"]}
    assert list(rows) == ["Zero", "Full", "ev"]
    assert rows["ev"]["em"] == report["metrics"]["rag_em"]
    assert rows["Full"]["tokens"] == pytest.approx(sum(
        len(f"{c['title']} {c['text']}".split()) for r in records for c in r["candidates"])
        / len(records))

    hotpot = _copy(UTILITY, tmp_path, dataset="hotpotqa-distractor")
    result = CliRunner().invoke(cli, ["score", str(evidence), "--against", str(hotpot), "--rag"])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if "┃ method" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == ["method", "evidence", "F1",
                                                                  "Tok"]
    assert "rag_f1" in _score(evidence, "--against", hotpot, "--rag")["metrics"]


def test_answer_cap_is_seers_to_set_and_a_utility_artifacts_own():
    seer = json.loads((SEER / "manifest.json").read_text())
    assert qa_setting(seer, "x").sampling == ANSWER  # greedy, 256 new tokens
    assert qa_setting(seer, "x", max_tokens=32).sampling.max_tokens == 32
    utility = json.loads((UTILITY / "manifest.json").read_text())
    assert qa_setting(utility, "x", max_tokens=32).sampling.max_tokens == 32  # its own
    with pytest.raises(InputError, match="asked with its own cap, 32 new tokens"):
        qa_setting(utility, "x", max_tokens=64)


@pytest.mark.parametrize("case", ["unknown qid", "ranking", "qrels", "no generator",
                                  "cap on a selection"])
def test_bad_input_is_one_line_before_any_model_loads(tmp_path, unloadable, case):
    evidence = _write(tmp_path / "ev.jsonl", [{"qid": Q0, "evidence": "text"}])
    against, expected, options = SEER, None, []
    if case == "unknown qid":
        evidence = _write(tmp_path / "ev.jsonl", [{"qid": "nope", "evidence": "text"}])
        expected = f"{evidence}:1 field 'qid': unknown qid 'nope'"
    elif case == "ranking":
        evidence = _write(tmp_path / "run.jsonl", [{"qid": Q0, "ranking": ["a"]}])
        expected = f"{SEER} field 'artifact': expected a utility artifact, this is a seer"
    elif case == "qrels":
        against = _write(tmp_path / "qrels.txt", [])
        against.write_text(f"{Q0} 0 p 1\n")
        expected = (f"{against}: extraction is scored against a reference with questions and "
                    "answers (a utility or seer artifact), not qrels")
    elif case == "cap on a selection":
        evidence = _write(tmp_path / "sel.jsonl", [{"qid": Q0, "selected": []}])
        against, options = UTILITY, ["--max-new-tokens", "8"]
        expected = "field 'max_new_tokens': --max-new-tokens caps the answers of --rag on an"
    else:
        against = _copy(SEER, tmp_path, llm="llama2-7b-chat",
                        model_id="meta-llama/Llama-2-7b-chat-hf")
        expected = ("field 'llm': the artifact's LLM 'llama2-7b-chat' is not found here: "
                    "offline, and not in the Hugging Face cache")
    result = CliRunner().invoke(cli, ["score", str(evidence), "--against", str(against),
                                      "--rag", *options])
    assert result.exit_code == 1
    assert result.exception.line().startswith(expected), result.exception.line()


def test_seer_table_one_with_the_bundled_model(tmp_path, loads, smollm):
    """The SEER fixture's two queries with SmolLM2 as the generator: the table prints EM for
    the evidence, the full passages and closed-book; Zero and Full equal the generator's
    answers asked independently (from the call cache: nothing recomputed), and Tok equals the
    build's own counts of the passages and the rank-1 extractions."""
    from labeler.llm.base import Sampling, chat
    from labeler.llm.cache import CachedBackend
    from labeler.llm.call_store import cache_stats
    from labeler.metrics.answers import has_answer
    from labeler.tasks.utility import CLOSED_BOOK, WITH_PASSAGE

    records, cache = _records(SEER), tmp_path / "calls"
    evidence = _write(tmp_path / "evidence.jsonl", [
        {"qid": Q0, "evidence": SeerTask.best_evidence(records[0])},  # the artifact's own: one call
        {"qid": Q1, "evidence": records[1]["candidates"][0]["text"]}])
    options = ["--against", str(SEER), "--rag", "--max-new-tokens", "32", "--cache-dir",
               str(cache)]
    result = CliRunner().invoke(cli, ["score", str(evidence), *options])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if "┃ method" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == ["method", "evidence", "EM",
                                                                  "Tok"]
    shown = [line.split("│")[1].strip() for line in result.stdout.splitlines()
             if line.startswith("│ ") and line.count("│") == 5]
    assert shown == ["Zero", "Full", "artifact", "evidence"]

    computed = cache_stats(cache).misses
    rows = {row["method"]: row for row in _score(evidence, *options)["qa"]["rows"]}
    generator = CachedBackend(smollm, cache_dir=cache)
    greedy = Sampling(temperature=0.0, max_tokens=32)
    closed = [chat(CLOSED_BOOK.format(question=r["question"])) for r in records]
    full = [chat(WITH_PASSAGE.format(question=r["question"], passage="\n".join(
        f"{c['title']} {c['text']}" for c in r["candidates"]))) for r in records]
    answers = generator.generate(closed + full, greedy)
    assert cache_stats(cache).misses == computed  # every answer was the score's, cached
    correct = [has_answer(a[0].text.strip(), r["answers"])
               for a, r in zip(answers, records + records)]
    assert rows["Zero"]["em"] == sum(correct[:2]) / 2 and rows["Zero"]["tokens"] == 0
    assert rows["Full"]["em"] == sum(correct[2:]) / 2
    assert rows["Full"]["tokens"] == sum(r["passage_tokens"] for r in records) / 2
    assert rows["artifact"]["tokens"] == sum(
        next(e["tokens"] for e in r["extractions"] if e["rank"] == 1) for r in records) / 2


def test_utility_zero_and_full_are_the_artifacts_cached_answers(tmp_path, nq2_build, loads):
    """Against SmolLM2's utility build, Zero and Full are its closed-book and all-candidate
    answers (its accuracy_no_passage and accuracy_all), served by the call cache: only the
    evidence is asked anew."""
    _, calls, artifact = copy_nq2_build(nq2_build, tmp_path)
    records = _records(artifact)
    evidence = _write(tmp_path / "ev.jsonl", [
        {"qid": r["qid"], "evidence": r["candidates"][-1]["text"]} for r in records])
    report = _score(evidence, "--against", artifact, "--rag", "--cache-dir", calls)
    rows = {row["method"]: row for row in report["qa"]["rows"]}
    stats = json.loads((artifact / "manifest.json").read_text())["stats"]
    assert rows["Zero"]["em"] == stats["accuracy_no_passage"]
    assert rows["Full"]["em"] == stats["accuracy_all"]
    assert list(rows) == ["Zero", "Full", "ev"]
    assert loads[-1].backend_calls == len(records)  # the evidence's answers only
