"""What a BM25 ranking is made of: the fields searched and their boosts, the analyser (an
optional Snowball stemmer), k1 and b; parsed from options, defaulted by the dataset, and how
each analyser turns text into terms (`labeler.retrieval.bm25` indexes and searches them).

A dataset may name its own settings (`Source.bm25`: WANDS and ESCI, the rubric experiment's
decision arms' `title^9.4,text^4` with English Snowball stems); an option given overrides it, and every other
dataset searches one field, `contents` (title and text), unstemmed.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from labeler.errors import InputError, MissingDependencyError

NAME = "bm25"
K1, B = 1.2, 0.75
METHOD, STOPWORDS = "lucene", "en"
#: what a field indexes of a passage: its title, its text, or both ("title text")
FIELDS = ("contents", "title", "text")
DEFAULT_FIELDS = (("contents", 1.0),)
#: the experiment's folding: curly quotes and dashes to ASCII, then (one pass, so a folded
#: double quote or dash stays) every ASCII punctuation mark to a space
_FOLD = str.maketrans({"‘": "'", "’": "'", "´": "'", "“": '"', "”": '"', "–": "-",
                       **{mark: " " for mark in string.punctuation}})


@dataclass(frozen=True)
class BM25:
    """One BM25 ranking's settings, as `build_pools` records an encoder."""

    fields: tuple[tuple[str, float], ...] = DEFAULT_FIELDS  # (field, boost), in order
    stemmer: str | None = None  # a Snowball language (PyStemmer's name), None: unstemmed
    k1: float = K1
    b: float = B

    def __post_init__(self) -> None:
        if not self.fields:
            raise InputError("BM25 needs at least one field", field_name="bm25_fields")
        names = [name for name, _ in self.fields]
        for name, boost in self.fields:
            if name not in FIELDS:
                raise InputError(f"unknown BM25 field {name!r}", field_name="bm25_fields",
                                 hint=f"use {', '.join(FIELDS)}, e.g. title^9.3,text^4.1")
            if not boost > 0:
                raise InputError(f"the boost of field {name!r} must be positive, got {boost}",
                                 field_name="bm25_fields")
        if len(set(names)) < len(names):
            raise InputError("a BM25 field is named twice", field_name="bm25_fields")
        if self.k1 < 0:
            raise InputError(f"k1 must be at least 0, got {self.k1}", field_name="bm25_k1")
        if not 0 <= self.b <= 1:
            raise InputError(f"b must be in [0, 1], got {self.b}", field_name="bm25_b")
        if self.stemmer is not None:
            stemmer(self.stemmer)  # fails on an unknown language before any work

    @classmethod
    def of(cls, defaults: Mapping[str, object] | None = None, *, fields: str | None = None,
           stemmer: str | None = None, k1: float | None = None, b: float | None = None) -> BM25:
        """The settings from options (None: unset; `stemmer` "none": unstemmed) over a
        dataset's `defaults` ({fields, stemmer, k1, b}, any of them) over the defaults here."""
        given = {"fields": fields, "stemmer": stemmer, "k1": k1, "b": b}
        merged = {**dict(defaults or {}), **{k: v for k, v in given.items() if v is not None}}
        spec = merged.get("fields")
        language = merged.get("stemmer")
        return cls(fields=parse_fields(spec) if spec else DEFAULT_FIELDS,
                   stemmer=None if language in (None, "none") else str(language),
                   k1=float(merged.get("k1", K1)), b=float(merged.get("b", B)))

    @property
    def spec(self) -> str:
        """The fields as the option writes them: "title^9.3,text^4.1"."""
        return ",".join(f"{name}^{boost:g}" for name, boost in self.fields)

    def describe(self) -> dict:
        """The manifest's record of the retriever."""
        return {"name": NAME, "model_id": f"bm25s {METHOD} k1={self.k1} b={self.b} "
                                          f"fields={self.spec} stemmer={self.stemmer or 'none'}",
                "pooling": None, "fields": dict(self.fields), "stemmer": self.stemmer,
                "stopwords": None if self.stemmer else STOPWORDS, "k1": self.k1, "b": self.b}


#: one unstemmed field, contents: every dataset's that names none
DEFAULT = BM25()


def parse_fields(spec: str) -> tuple[tuple[str, float], ...]:
    """"title^9.3,text^4.1" -> (("title", 9.3), ("text", 4.1)); a field without ^ has boost 1.

    >>> parse_fields("title^9.3, text")
    (('title', 9.3), ('text', 1.0))
    """
    fields = []
    for part in spec.split(","):
        name, caret, boost = part.strip().partition("^")
        try:
            fields.append((name.strip(), float(boost) if caret else 1.0))
        except ValueError:
            raise InputError(f"bad BM25 field {part.strip()!r}", field_name="bm25_fields",
                             hint="write FIELD^BOOST,..., e.g. title^9.3,text^4.1") from None
    return tuple(fields)


def stemmer(language: str) -> Callable[[str], str]:
    """The Snowball stemmer of `language` (PyStemmer's `stemWord`)."""
    try:
        import Stemmer
    except ImportError as exc:
        raise MissingDependencyError("Snowball stemming", "pystemmer") from exc
    if language not in Stemmer.algorithms():
        raise InputError(f"no Snowball stemmer {language!r}", field_name="bm25_stemmer",
                         hint=f"use none or one of {', '.join(Stemmer.algorithms())}")
    return Stemmer.Stemmer(language).stemWord


def split_words(text: str) -> list[str]:
    """The stemmed analyser's words before stemming (`text` already lower-cased)."""
    return text.translate(_FOLD).replace("'", " ").split()


def tokenizer(bm25: BM25):
    """The bm25s Tokenizer that indexes a field under `bm25`'s analyser."""
    from bm25s.tokenization import Tokenizer

    if bm25.stemmer is None:
        return Tokenizer(stopwords=STOPWORDS)
    return Tokenizer(splitter=split_words, stopwords=None, stemmer=stemmer(bm25.stemmer))


def vocabulary(tokenizer) -> dict[str, int]:
    """A tokenizer's terms and their ids: its stems where it stems, else its words."""
    return tokenizer.stem_to_sid if tokenizer.stemmer is not None else tokenizer.word_to_id


def analyze(texts: list[str], bm25: BM25) -> list[list[str]]:
    """The terms of each of `texts` (queries) as `bm25`'s index holds them, repeats kept."""
    if bm25.stemmer is None:
        import bm25s

        return bm25s.tokenize(texts, stopwords=STOPWORDS, return_ids=False, show_progress=False)
    stem = stemmer(bm25.stemmer)
    return [[stem(word) for word in split_words(text.lower())] for text in texts]
