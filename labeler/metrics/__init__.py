"""Metrics: answer matching, set and ranking metrics, significance tests."""

from labeler.metrics.answers import answer_tokens, has_answer

__all__ = ["answer_tokens", "has_answer"]
