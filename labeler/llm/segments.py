"""Token ids by segments: a prompt's ids are its pieces' ids put end to end, each distinct
piece encoded once a call, at a cut a per-model probe proved exact.

A rendered prompt is cut at its lone newlines (`_lone`): a newline between two non-space
characters, or with one space on one side and a letter or digit beyond it. The
template's fixed text, the question's line and each passage's line become pieces, and a
query's one-passage prompts and its all-passage prompt share its passages' pieces. Which side
the newline goes with depends on the tokenizer's pre-tokenizer: GPT-2's regex (SmolLM2) keeps
"\\n" out of the word before it, so the newline goes with the piece `AFTER` it; Llama 3's and
Qwen's regexes glue trailing newlines onto punctuation (`[^\\s\\p{L}\\p{N}]+[\\r\\n]*`), so the
newline goes with the piece `BEFORE` it. `cut_of` finds, once per tokenizer, the first cut at
which a probe holding every kind of boundary encodes to the whole probe's ids; a tokenizer with
no such cut (a normalizer or pre-tokenizer that reads across lines, an added token that strips
the newline beside it) is encoded whole. With LABELER_CHECK_TOKENS set, every prompt is also
encoded whole and compared (`settings.check_tokens`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from itertools import pairwise

from labeler import settings

AFTER, BEFORE = "after", "before"
#: the cuts tried, in order
CUTS = (AFTER, BEFORE)
#: characters met on either side of a cut in the probe: letters (cased, accented, CJK),
#: numbers, punctuation that regexes glue newlines onto, quotes, a contraction, an emoji
EDGES = ("a", "Z", "é", "ß", "中", "7", "42", ".", ",", ":", "?", "!", '"', "'", ")", "(", "-",
         "—", "…", "*", "#", ">", "'s", "😀")
#: the white space around a cut: a newline alone, with a space before it, with one after it
SEPARATORS = ("\n", " \n", "\n ")

Encoder = Callable[[list[str]], list[list[int]]]

_cuts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def encode_by_segments(tokenizer, texts: list[str], whole: Encoder) -> list[list[int]]:
    """The ids `whole(texts)` gives, each distinct piece of `texts` encoded once (whole
    encoding where the tokenizer has no proven cut)."""
    cut = cut_of(tokenizer, whole)
    if cut is None:
        return whole(texts)
    pieces = [split(text, cut) for text in texts]
    distinct = list(dict.fromkeys(p for row in pieces for p in row))
    known = dict(zip(distinct, whole(distinct)))
    ids = []
    for row in pieces:
        joined: list[int] = []
        for piece in row:
            joined += known[piece]
        ids.append(joined)
    if settings.check_tokens():
        _compare(texts, ids, whole(texts))
    return ids


def cut_of(tokenizer, whole: Encoder) -> str | None:
    """The first of CUTS at which the probe's pieces encode to the whole probe's ids, for this
    tokenizer (found once); None if neither is exact."""
    try:
        return _cuts[tokenizer]
    except KeyError:
        pass
    except TypeError:  # not weakly referable: probed on each call
        return _probe(tokenizer, whole)
    _cuts[tokenizer] = cut = _probe(tokenizer, whole)
    return cut


def split(text: str, cut: str) -> list[str]:
    """`text` in pieces at its lone newlines, the newline going with the piece `cut` says.

    >>> split("Information: \\nA.\\nB\\n Answer:\\n\\nend", AFTER)
    ['Information: ', '\\nA.', '\\nB', '\\n Answer:\\n\\nend']
    >>> split("Information: \\nA.\\nB\\n Answer:\\n\\nend", BEFORE)
    ['Information: \\n', 'A.\\n', 'B\\n', ' Answer:\\n\\nend']
    """
    parts = text.split("\n")
    pieces: list[str] = []
    held = [parts[0]]  # the parts of the piece being built, to be joined by newlines
    for left, right in pairwise(parts):
        if not _lone(left, right):
            held.append(right)
        elif cut == AFTER:
            pieces.append("\n".join(held))
            held = ["\n" + right]
        else:
            pieces.append("\n".join(held) + "\n")
            held = [right]
    pieces.append("\n".join(held))
    return pieces


def _lone(left: str, right: str) -> bool:
    """Whether the newline between `left` and `right` (the lines around it) is a lone one:
    between two non-space characters, or with one space on one side, a non-space character
    before the run and a letter or digit after it (not the start of an added token, which a
    pre-tokenizer reads as the end of the text)."""
    if not left or not right:
        return False
    before, after = left[-1], right[0]
    if before == " ":
        return len(left) > 1 and not left[-2].isspace() and after.isalnum()
    if before.isspace():
        return False
    if after == " ":
        return len(right) > 1 and right[1].isalnum()
    return not after.isspace()


def _probe(tokenizer, whole: Encoder) -> str | None:
    text = probe_text(tokenizer)
    expected = whole([text])[0]
    for cut in CUTS:
        pieces = split(text, cut)
        if [i for ids in whole(pieces) for i in ids] == expected:
            return cut
    return None


def probe_text(tokenizer) -> str:
    """Lines meeting at every pair of EDGES across every one of SEPARATORS, and each of the
    tokenizer's added tokens (special tokens: a chat template writes them beside newlines)
    between lines of its own, of words and of punctuation."""
    lines = [f"{b} word {a}" for a in EDGES for b in EDGES]
    text = "".join(line + SEPARATORS[k % 3] for k, line in enumerate(lines))
    added = [t for t in getattr(tokenizer, "added_tokens_decoder", {}).values()
             if str(t).strip()]
    for k, token in enumerate(map(str, added)):
        for sep in SEPARATORS:
            text += f"{token}{sep}{token}{sep}a.{sep}{token}{sep}word{sep}"
        text += f"{token}{SEPARATORS[k % 3]}"
    return text + "end"


def _compare(texts: list[str], ids: list[list[int]], expected: list[list[int]]) -> None:
    """LABELER_CHECK_TOKENS: raise where a prompt's ids by segments differ from its whole ids."""
    for k, (got, want) in enumerate(zip(ids, expected)):
        if got != want:
            at = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w),
                      min(len(got), len(want)))
            raise RuntimeError(
                f"{settings.CHECK_TOKENS}: prompt {k}'s ids by segments differ from its whole "
                f"encoding at token {at} of {len(want)} ({texts[k][:80]!r}...)")
