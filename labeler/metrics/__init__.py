"""Metrics: answer matching, set and ranking metrics, SEER's experts, significance tests."""

from labeler.metrics.answers import answer_tokens, has_answer
from labeler.metrics.experts import (
    Experts,
    Extraction,
    helpfulness,
    load_experts,
    load_faithfulness,
)
from labeler.metrics.extraction import extraction_metrics, token_counts
from labeler.metrics.ranking import rank_metrics
from labeler.metrics.selection import SelectionScores, selection_metrics
from labeler.metrics.significance import PairedTest, paired_t_test

__all__ = [
    "Experts",
    "Extraction",
    "PairedTest",
    "SelectionScores",
    "answer_tokens",
    "extraction_metrics",
    "has_answer",
    "helpfulness",
    "load_experts",
    "load_faithfulness",
    "paired_t_test",
    "rank_metrics",
    "selection_metrics",
    "token_counts",
]
