"""`nq-open-train` and `nq-open-test`: Natural Questions as Lee et al. (2019) made it open-domain (NQ-open), its
train split as DPR divided it (79,168 questions; 8,757 went to DPR's dev), in FlashRAG's
layout: SEER's NQ training set (Table 3: 79.1k / 8.7k / 3.6k); its test split (3,610) is
SEER's NQ test set.

SEER, after FilCo, discards "answers with more than 5 tokens". A token is what Lee et al.
count, a token of NQ's document; NQ-open writes an answer as its tokens joined by single
spaces ("March 30 , 2018"), so the tokens here are the answer's whitespace-separated pieces
(`str.split`). An answer over `MAX_ANSWER_TOKENS` is dropped, and a question left without
answers with it. NQ-open already holds to the rule, so little goes: of the 6,490 answers of
NQ-open dev (shared/data/nq_open), 1 ("Vice President George H. W. Bush") and no question.
"""

from __future__ import annotations

from labeler.sources.flashrag import load_hub_split
from labeler.sources.kilt import LICENSE
from labeler.sources.types import Query, Source

#: the longest answer NQ-open keeps, in words
MAX_ANSWER_TOKENS = 5


def load_nq_open_train(*, limit: int | None = None) -> Source:
    """NQ-open train (DPR's split) from FlashRAG_datasets, answers of at most 5 words."""
    return load_hub_split("nq-open-train", license=LICENSE["nq"], limit=limit,
                          prepare=short_answers)


def load_nq_open_test(*, limit: int | None = None) -> Source:
    """NQ-open test (DPR's split, SEER's NQ test) from FlashRAG_datasets, answers of at most 5
    words."""
    return load_hub_split("nq-open-test", license=LICENSE["nq"], limit=limit,
                          prepare=short_answers)


def short_answers(query: Query) -> Query | None:
    """`query` with only its answers of at most `MAX_ANSWER_TOKENS` words; None when none is.

    >>> short_answers(Query("q", "who", ["Bush", "Vice President George H. W. Bush"])).answers
    ['Bush']
    """
    kept = [answer for answer in query.answers if len(answer.split()) <= MAX_ANSWER_TOKENS]
    if not kept:
        return None
    query.answers = kept
    return query
