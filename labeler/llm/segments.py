"""Token ids by segments: a prompt's ids are its pieces' ids put end to end, each distinct
piece encoded once a call, at a cut a per-model probe proved exact.

A rendered prompt is cut at its lone newlines (`_LONE`): a newline between two non-space
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

import re
import weakref
from collections.abc import Callable
from itertools import chain, pairwise

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


class _Tokenizer:
    """What is known of one tokenizer: its cut (probed once) and the ids of the pieces of its
    last CALLS_KEPT calls (a shard's later call, such as the utility task's utilitarian-passage
    prompts, reuses its passages' ids, also when calls of the shards labelled one ahead came
    between)."""

    def __init__(self, tokenizer, whole: Encoder) -> None:
        self.cut = _probe(tokenizer, whole)
        self.recent: list[dict[str, list[int]]] = []


#: calls whose pieces' ids a tokenizer keeps: a shard's first, the next shard's first (labelled
#: one ahead) and the previous shard's second can come before a shard's second call
CALLS_KEPT = 3

_known: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def encode_by_segments(tokenizer, texts: list[str], whole: Encoder) -> list[list[int]]:
    """The ids `whole(texts)` gives, each distinct piece of `texts` encoded once (whole
    encoding where the tokenizer has no proven cut)."""
    known = _of(tokenizer, whole)
    if known.cut is None:
        return whole(texts)
    pieces = [split(text, known.cut) for text in texts]
    distinct = dict.fromkeys(chain.from_iterable(pieces))
    ids_of: dict[str, list[int]] = {}
    for earlier in known.recent:
        ids_of.update((p, earlier[p]) for p in distinct.keys() & earlier.keys())
    new = [p for p in distinct if p not in ids_of]
    if new:  # a fast tokenizer of transformers 5 raises IndexError on no texts
        ids_of.update(zip(new, whole(new)))
    ids = [list(chain.from_iterable(map(ids_of.__getitem__, row))) for row in pieces]
    if settings.check_tokens():
        _compare(texts, ids, whole(texts))
    known.recent = [ids_of, *known.recent[:CALLS_KEPT - 1]]
    return ids


def cut_of(tokenizer, whole: Encoder) -> str | None:
    """The first of CUTS at which the probe's pieces encode to the whole probe's ids, for this
    tokenizer (found once); None if neither is exact."""
    return _of(tokenizer, whole).cut


def _of(tokenizer, whole: Encoder) -> _Tokenizer:
    try:
        known = _known.get(tokenizer)
    except TypeError:  # not weakly referable: probed on each call
        return _Tokenizer(tokenizer, whole)
    if known is None:
        _known[tokenizer] = known = _Tokenizer(tokenizer, whole)
    return known


def split(text: str, cut: str) -> list[str]:
    r"""`text` in pieces at its lone newlines, the newline going with the piece `cut` says.

    >>> split("Information: \nA.\nB\n Answer:\n\nend", AFTER)
    ['Information: ', '\nA.', '\nB', '\n Answer:\n\nend']
    >>> split("Information: \nA.\nB\n Answer:\n\nend", BEFORE)
    ['Information: \n', 'A.\n', 'B\n', ' Answer:\n\nend']
    """
    if _MARK in text:  # the mark cannot cut it: the pieces by their bounds
        bounds = [0, *(m.end() if cut == BEFORE else m.start() for m in _LONE.finditer(text)),
                  len(text)]
        return [text[i:j] for i, j in pairwise(bounds)]
    return _LONE.sub(_MARKED[cut], text).split(_MARK)


#: a character that marks where pieces start, where the text holds none
_MARK = "\x00"
_MARKED = {AFTER: _MARK + "\n", BEFORE: "\n" + _MARK}
#: a lone newline: one between two non-space characters, or one with a single space on one
#: side, a non-space character before the run and a letter or digit after it (`[^\W_]`; not
#: the start of an added token, which a pre-tokenizer reads as the end of the text)
_LONE = re.compile(r"\n(?:(?<=\S\n)(?=\S| [^\W_])|(?<=\S \n)(?=[^\W_]))")


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
