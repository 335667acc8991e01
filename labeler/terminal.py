"""User-supplied text made safe to print: a control character (an escape sequence that sets the
terminal's title, a NUL that hides what follows, a carriage return that overwrites) is shown as
its Python escape, so what a file holds is what a person reads.

    >>> escape("p1\\x1b]0;owned\\x07")
    'p1\\\\x1b]0;owned\\\\x07'
"""

from __future__ import annotations

import re

#: C0 and C1 controls, DEL, and the format characters that reorder or hide text (bidi
#: overrides, zero-width ones)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def escape(text: str) -> str:
    """`text` with every control and invisible format character written as its escape:
    `\\x1b`, `\\x00`, `\\n`, `\\u202e`; every other character as it is."""
    return _UNSAFE.sub(_escaped, text)


def _escaped(match: re.Match) -> str:
    char = match.group()
    return repr(char)[1:-1] if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def markup_safe(text: object) -> str:
    """`text` `escape`d, and its brackets escaped from rich's markup: for user-supplied text
    (a file name, a qid, a submission's evidence) printed through rich with markup on."""
    from rich.markup import escape as markup_escape

    return markup_escape(escape(str(text)))
