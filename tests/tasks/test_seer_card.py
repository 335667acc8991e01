"""The SEER card: the notice when faithfulness is not SEER's AlignScore, the ablations'
settings, and the evidence-length rows labelled by the extractor that produced them."""

from __future__ import annotations

import pytest

from labeler.artifacts.card import render_card
from labeler.tasks.seer import SeerTask

NOTICE = "not SEER's AlignScore"


def _manifest(faithfulness: str, *, dedup: bool = True, weighting: str = "cov",
              extractor: str | None = None) -> dict:
    """A SEER manifest as a build writes one, cut to what the card reads."""
    return {
        "artifact": "seer", "dataset": "nq-sample", "llm": "smollm2-135m",
        "model_id": "HuggingFaceTB/SmolLM2-135M-Instruct", "license": "cc-by-sa-3.0",
        "counts": {"records": 2}, "files": {"data-00000.jsonl": "0" * 64},
        "k": 5, "source_dataset": "nq-sample", "tool_version": "0", "version": "1",
        "created_at": "2026-12-02T00:00:00Z", "seed": 0,
        "config": {"samples": 10, "extractor": extractor, "dedup": dedup, "ngram": 2,
                   "duplicate_at": 0.8, "weights": weighting},
        "experts": {"faithfulness": faithfulness, "helpfulness": "log-likelihood gain",
                    "conciseness": "sbert:all-MiniLM-L6-v2"},
        "settled": {"weighting": weighting, "tau": 1.0,
                    "cov": {"faithfulness": 0.1, "helpfulness": 0.5, "conciseness": 0.3},
                    "weights": {"faithfulness": 0.25, "helpfulness": 0.4, "conciseness": 0.35}
                    if weighting == "cov" else dict.fromkeys(("faithfulness", "helpfulness",
                                                              "conciseness"), 1 / 3)},
        "stats": {"queries": 2, "samples": 20, "blank": 3, "duplicates": 5, "extractions": 12,
                  "mean_passage_tokens": 800.0, "mean_evidence_tokens": 100.0,
                  "compression": 8.0},
    }


def _card(manifest: dict) -> str:
    return render_card(manifest, SeerTask.metadata, SeerTask.card_context(manifest))


@pytest.mark.parametrize(("scorer", "shown", "named"), [
    ("llm", True, "LLM as judge"),
    ("LLM", True, "LLM as judge"),  # read case-blind
    ("nli:cross-encoder/nli-deberta-v3-base", True, "NLI model"),
    ("alignscore:yzha/AlignScore/AlignScore-large.ckpt", False, None),
    ("AlignScore:/models/AlignScore-base.ckpt", False, None),
    ("", True, "the scorer above"),  # a manifest without experts: never claimed AlignScore
])
def test_the_notice_shows_for_every_scorer_but_alignscore(scorer, shown, named):
    card = _card(_manifest(scorer))
    assert (NOTICE in card) is shown
    if named:
        assert named in card


def test_default_build_shows_cov_weights_and_the_duplicates_dropped():
    card = _card(_manifest("llm"))
    assert "α = softmax(CoV/τ) with τ = 1.0" in card and "Uniform weights" not in card
    assert "| blank samples dropped | 3 |" in card
    assert "| near-duplicates dropped (Kondrak n-gram similarity ≥ 0.8, n = 2) | 5 |" in card
    assert "near-duplicates were dropped" in card


def test_ablations_are_named_in_the_intro_weights_and_statistics():
    card = _card(_manifest("llm", dedup=False, weighting="uniform"))
    assert "**Uniform weights**, α = 1/3 each" in card and "`--weights uniform`" in card
    assert "| helpfulness | 0.500 | 0.333 |" in card
    assert "| near-duplicates dropped | none: kept (`--no-dedup`" in card
    assert "every non-blank one was kept" in card


def test_compression_row_names_the_extractor_and_seers_arithmetic():
    card = _card(_manifest("llm", extractor="qwen3-8b"))
    assert ("| passage ÷ evidence tokens (qwen3-8b's samples, before training) | 8.000 |"
            in card)
    assert "mean of Table 1's six per-cell ratios" in card and "782.5/93 = 8.41" in card
    assert "(smollm2-135m's samples, before training)" in _card(_manifest("llm"))


def test_the_card_counts_the_queries_left_out():
    manifest = {**_manifest("alignscore"), "unanswered": [{"qid": "q1", "reason": "too long"}]}
    assert ("| queries | 2 |\n| queries left out: the server refused a prompt of each as too "
            "long (the manifest's `unanswered`, each with the server's reason) | 1 |\n"
            "| queries skipped without a gold answer |") in _card(manifest)
