"""SEER's ablations and its evidence length, with the scripted backend: de-duplication on and
off (Table 2 (B)), uniform weights (Table 2 (C)), and the compression statistic as SEER's
Table 1 measures a cell."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.scripted import ScriptedBackend

from labeler.retrieval import Candidate
from labeler.sources.registry import load_source
from labeler.tasks.base import Shard
from labeler.tasks.seer import SeerConfig, SeerTask

FIRST = "The Eiffel Tower is in Paris, France, and was completed in 1889."
SAMPLES = [
    FIRST,
    FIRST,  # an exact repeat
    "the Eiffel Tower is in Paris, France; it was completed in 1889.",  # a near-duplicate
    "   ",  # blank once stripped
    "Gustave Eiffel's company built the tower for the 1889 World's Fair.",
    "",  # blank
]


def _label(**options) -> list[dict]:
    """One nq-sample query with two passages, its six samples scripted as SAMPLES, labelled,
    weighted and ranked."""
    source = load_source("nq-sample", limit=1)
    (query,) = source.queries
    shard = Shard(0, (query,), {query.qid: [
        Candidate(p, "retrieved", i) for i, p in enumerate(source.corpus.passages[:2], 1)]})
    backend = ScriptedBackend(
        answer=lambda text: SAMPLES if "Extract from the passages" in text else "It is so.",
        loglik=lambda context, continuation: -2.0 if "Evidence" in context else -3.0,
        probs=lambda text, choices: {" yes": 0.6, " no": 0.2})
    task = SeerTask(SeerConfig(dataset="nq-sample", samples=len(SAMPLES), **options))
    records = task.label(task.calls(backend), shard)
    return task.derive(records, task.settle(records))["data"]


def test_dedup_drops_blanks_repeats_and_near_duplicates_counted_apart():
    (record,) = _label()
    assert sorted(e["sample"] for e in record["extractions"]) == [0, 4]
    assert record["samples"] == 6 and record["blank"] == 2 and record["duplicates"] == 2
    stats = SeerTask.statistics([record])
    assert (stats["samples"], stats["blank"], stats["duplicates"], stats["extractions"]) == (
        6, 2, 2, 2)


def test_no_dedup_keeps_every_non_blank_sample():
    (record,) = _label(dedup=False)
    assert sorted(e["sample"] for e in record["extractions"]) == [0, 1, 2, 4]  # the repeat too
    assert record["blank"] == 2 and record["duplicates"] == 0
    (coarser,) = _label(duplicate_at=0.35)  # sample 4 is 0.38-similar to the first
    assert [e["sample"] for e in coarser["extractions"]] == [0]


def test_uniform_weights_are_a_third_each_and_rank_by_the_plain_mean():
    records = [{"extractions": [
        {"text": "a", "sample": 0, "tokens": 1,
         "scores": {"faithfulness": 0.9, "helpfulness": 0.1, "conciseness": 0.2}},
        {"text": "b", "sample": 1, "tokens": 1,
         "scores": {"faithfulness": 0.5, "helpfulness": 0.6, "conciseness": 0.3}}]}]
    cov = SeerTask(SeerConfig(dataset="nq-sample")).settle(records)
    uniform = SeerTask(SeerConfig(dataset="nq-sample", weights="uniform")).settle(records)
    assert cov["weighting"] == "cov" and uniform["weighting"] == "uniform"
    assert uniform["weights"] == pytest.approx({"faithfulness": 1 / 3, "helpfulness": 1 / 3,
                                                "conciseness": 1 / 3})
    assert uniform["cov"] == cov["cov"]  # still recorded, for the card's comparison
    assert cov["weights"]["helpfulness"] > 1 / 3  # helpfulness varies most here
    task = SeerTask(SeerConfig(dataset="nq-sample", weights="uniform"))
    record = {"qid": "q", "question": "q?", "answers": ["a"], "candidates": [], "pairs": 0,
              **records[0]}
    (ranked,) = task.derive([record], uniform)["data"]
    assert [e["text"] for e in ranked["extractions"]] == ["b", "a"]  # 1.4/3 > 1.2/3
    assert ranked["extractions"][0]["scores"]["weighted"] == pytest.approx(1.4 / 3)


def _record(passage_tokens: int, evidence_tokens: list[int], skipped: str | None = None) -> dict:
    return {"skipped": skipped, "samples": 10, "blank": 0, "duplicates": 0, "pairs": 0,
            "passage_tokens": passage_tokens, "extractions": [
                {"tokens": t, "scores": {"faithfulness": 0.5, "helpfulness": 0.5,
                                         "conciseness": 0.5, "weighted": 0.5}}
                for t in evidence_tokens]}


def test_compression_is_a_table_1_cell_each_query_weighing_alike():
    records = [_record(100, [10, 10, 10, 10]),  # evidence 10 tokens on average
               _record(500, [40]),  # 40
               _record(300, []),  # every sample blank: 0 tokens fed
               _record(0, [], skipped="no passages")]  # not a query SEER measures
    stats = SeerTask.statistics(records)
    assert stats["mean_passage_tokens"] == pytest.approx(300)
    assert stats["mean_evidence_tokens"] == pytest.approx(50 / 3)
    assert stats["compression"] == pytest.approx(300 / (50 / 3))  # 18; per extraction: 15.6


def test_seers_9_25_is_the_mean_of_six_cell_ratios_not_the_ratio_of_means():
    """SEER's Table 1, Full Tok and SEER Tok for NQ, TQA, HotpotQA × Flan-T5, Llama2: each
    cell is one artifact's compression; their mean is the paper's 9.25×, the ratio of the
    means 8.41."""
    cells = [(732, 89), (804, 95), (760, 121), (813, 133), (765, 58), (821, 62)]
    ratios = [SeerTask.statistics([_record(full, [seer])])["compression"]
              for full, seer in cells]
    assert ratios == pytest.approx([full / seer for full, seer in cells])
    assert sum(ratios) / 6 == pytest.approx(9.25, abs=0.005)  # 55.51 / 6
    assert (sum(f for f, _ in cells) / 6) / (sum(s for _, s in cells) / 6) == pytest.approx(
        8.41, abs=0.005)  # 782.5 / 93


def test_build_options_reach_the_config():
    """--no-dedup and --weights uniform, parsed as `labeler build` parses them."""
    import click

    from labeler.cli.options import task_options

    seen = {}

    @click.command()
    @task_options()
    def command(**options):
        seen.update(options)

    assert CliRunner().invoke(command, []).exit_code == 0
    assert seen["dedup"] is None and seen["weights"] is None  # unset: the config's defaults
    default = SeerConfig.from_options(dataset="nq-sample", **{
        k: v for k, v in seen.items() if k in ("dedup", "weights")})
    assert default.dedup is True and default.weights == "cov"
    result = CliRunner().invoke(command, ["--no-dedup", "--weights", "uniform"])
    assert result.exit_code == 0, result.output
    config = SeerConfig.from_options(dataset="nq-sample", dedup=seen["dedup"],
                                     weights=seen["weights"])
    assert config.dedup is False and config.weights == "uniform"
    bad = CliRunner().invoke(command, ["--weights", "equal"])
    assert bad.exit_code == 2 and "'equal' is not one of 'cov', 'uniform'" in bad.output
