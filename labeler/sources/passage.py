"""The one retrievable unit of text every source, corpus and pool shares."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """One retrievable unit of text."""

    pid: str  # stable id: the psgs_w100 id where the source has one
    title: str
    text: str

    @property
    def contents(self) -> str:
        """The text an LLM or an encoder sees: `"{title} {text}"`."""
        return f"{self.title} {self.text}" if self.title else self.text

    @property
    def stripped(self) -> str:
        """Title and text, each stripped, joined by a space: the utility paper's
        `format_passage`, which its prompts show."""
        return f"{self.title.strip()} {self.text.strip()}".strip()
