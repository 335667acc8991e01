"""Answer matching: DPR-style `has_answer`, as the utility paper and DPR evaluate QA."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import cache


def answer_tokens(text: str) -> list[str]:
    """NFD-normalised, lower-cased DPR tokens of `text`.

    >>> answer_tokens("Paris, France!")
    ['paris', ',', 'france', '!']
    """
    return [t.lower() for t in _token().findall(unicodedata.normalize("NFD", text))]


def has_answer(output: str, answers: Iterable[str]) -> bool:
    """True iff some answer's tokens occur as a contiguous run in the output's tokens.

    >>> has_answer("It is in Paris.", ["paris"])
    True
    >>> has_answer("Parisian food", ["Paris"])
    False
    """
    text = answer_tokens(output)
    for answer in answers:
        needle = answer_tokens(answer)
        if not needle:
            continue
        width = len(needle)
        if any(text[i : i + width] == needle for i in range(len(text) - width + 1)):
            return True
    return False


@cache
def _token():
    """DPR's SimpleTokenizer: runs of letters/digits/marks, or any single non-space character
    (compiled on first use: scoring a ranking imports this module, never `regex`)."""
    import regex

    return regex.compile(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]",
                         flags=regex.IGNORECASE | regex.UNICODE)
