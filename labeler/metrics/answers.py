"""Answer matching: DPR-style `has_answer`, as the utility paper, DPR and SEER (EM on NQ and
TriviaQA) evaluate QA, and SQuAD's unigram F1, as SEER evaluates HotpotQA."""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
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


def answer_f1(output: str, answers: Iterable[str]) -> float:
    """Unigram F1 of the output against its best gold answer, SQuAD-style: both normalised
    (`squad_normalize`), split on whitespace, F1 = 2·P·R / (P + R) over their common tokens
    (counted with multiplicity); the maximum over the answers, 0.0 without any.

    >>> answer_f1("It was the Eiffel Tower.", ["Eiffel Tower", "tower"])
    0.6666666666666666
    """
    predicted = squad_normalize(output).split()
    return max((_f1(predicted, squad_normalize(a).split()) for a in answers), default=0.0)


def squad_normalize(text: str) -> str:
    """SQuAD's answer normalisation: lower-cased, punctuation and the articles a/an/the
    removed, whitespace collapsed.

    >>> squad_normalize("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _f1(predicted: list[str], gold: list[str]) -> float:
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


@cache
def _token():
    """DPR's SimpleTokenizer: runs of letters/digits/marks, or any single non-space character
    (compiled on first use: scoring a ranking imports this module, never `regex`)."""
    import regex

    return regex.compile(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]",
                         flags=regex.IGNORECASE | regex.UNICODE)
