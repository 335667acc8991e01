"""Metrics: answer matching, set and ranking metrics, SEER's experts, significance tests."""

from labeler.metrics.answers import answer_tokens, has_answer
from labeler.metrics.experts import Extraction, faithfulness, helpfulness
from labeler.metrics.extraction import extraction_metrics, token_counts
from labeler.metrics.ranking import rank_metrics
from labeler.metrics.selection import SelectionScores, selection_metrics
from labeler.metrics.significance import PairedTest, paired_t_test

__all__ = [
    "Extraction",
    "PairedTest",
    "SelectionScores",
    "answer_tokens",
    "extraction_metrics",
    "faithfulness",
    "has_answer",
    "helpfulness",
    "paired_t_test",
    "rank_metrics",
    "selection_metrics",
    "token_counts",
]
