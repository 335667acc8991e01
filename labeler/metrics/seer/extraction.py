"""The record every SEER expert scores: one piece of evidence extracted for a question."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Extraction:
    """One piece of evidence extracted for a question from its passages."""

    question: str
    answer: str  # the gold answer the evidence should help produce
    evidence: str
    passages: tuple[str, ...]  # the passage texts the evidence was extracted from
    qid: str = ""  # names the item's requests in an error; the question when empty

    @property
    def name(self) -> str:
        return self.qid or self.question
