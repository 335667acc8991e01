"""SEER's de-duplication: Kondrak's n-gram similarity against a direct transcription of its
definition, and the greedy de-duplication against the same greedy rule without its bounds."""

from __future__ import annotations

import random
from functools import cache

import pytest

from labeler.metrics.seer.duplicates import _lcs_length, deduplicate, ngram_similarity


def kondrak(x: str, y: str, n: int) -> float:
    """Kondrak's S_n(x, y) / max(K, L) written out as the definition reads: n − 1 pads before
    each string; Γ_i the n-gram ending at character i; s the share of identical positions,
    positions where both hold a pad not counted; S by the recursion."""
    pad = "\0"
    xp, yp = pad * (n - 1) + x, pad * (n - 1) + y

    def s(i: int, j: int) -> float:  # 1-based n-grams Γ_i of x and Γ'_j of y
        grams = list(zip(xp[i - 1:i - 1 + n], yp[j - 1:j - 1 + n]))
        both_pads = sum(a == b == pad for a, b in grams)
        return sum(a == b != pad for a, b in grams) / (n - both_pads)

    @cache
    def big_s(i: int, j: int) -> float:
        if i == 0 or j == 0:
            return 0.0
        return max(big_s(i - 1, j), big_s(i, j - 1), big_s(i - 1, j - 1) + s(i, j))

    longest = max(len(x), len(y))
    return big_s(len(x), len(y)) / longest if longest else 1.0


def test_similarity_follows_kondraks_definition_on_random_strings():
    rng = random.Random(7)
    for _ in range(300):
        x = "".join(rng.choice("abc ") for _ in range(rng.randrange(0, 12)))
        y = "".join(rng.choice("abc ") for _ in range(rng.randrange(0, 12)))
        for n in (1, 2, 3):
            assert ngram_similarity(x, y, n) == pytest.approx(kondrak(x, y, n)), (x, y, n)


def test_unigram_similarity_is_the_lcs_over_the_longer_length():
    # Kondrak: S_1 is the length of the longest common subsequence
    assert ngram_similarity("abcde", "ace", 1) == pytest.approx(3 / 5)
    assert ngram_similarity("ab", "ba", 1) == 0.5  # LCS 1; edit distance would say 0


def test_bigram_example_matches_the_known_ngram_distance():
    # java-string-similarity / strsimpy NGram(2).distance("ABCD", "ABTUIO") = 0.5833 and
    # NGram(4) on the two Adobe strings 0.02778; on these pairs similarity = 1 − distance
    assert ngram_similarity("ABCD", "ABTUIO", 2) == pytest.approx(1 - 0.5833333333)
    assert ngram_similarity("Adobe CreativeSuite 5 Master Collection from cheap 4zp",
                            "Adobe CreativeSuite 5 Master Collection from cheap d1x",
                            4) == pytest.approx(1 - 0.0277777777)
    assert ngram_similarity("", "", 2) == 1.0 and ngram_similarity("a", "", 2) == 0.0


def test_lcs_is_bit_parallel_but_exact():
    rng = random.Random(3)
    for _ in range(300):
        x = "".join(rng.choice("ab c") for _ in range(rng.randrange(0, 20)))
        y = "".join(rng.choice("ab c") for _ in range(rng.randrange(0, 20)))
        assert _lcs_length(x, y) == round(kondrak(x, y, 1) * max(len(x), len(y), 1))


def test_dedup_keeps_the_first_of_near_duplicates_and_drops_blanks():
    a = "The Eiffel Tower is in Paris, France, and was completed in 1889."
    louder = "THE EIFFEL  TOWER is in Paris, France, and was completed in 1889."  # folded: a
    edited = "The Eiffel Tower is in Paris, France; it was completed in 1889."
    longer = a + " It is 330 metres tall and was the tallest structure until 1930."
    other = "Gustave Eiffel's company built the tower for the 1889 World's Fair."
    assert ngram_similarity(a.casefold(), edited.casefold()) >= 0.8
    assert ngram_similarity(a.casefold(), longer.casefold()) < 0.8  # a sentence more stays
    texts = [a, louder, other, "  ", edited, longer]
    assert deduplicate(texts) == [0, 2, 5]
    assert deduplicate(texts, threshold=None) == [0, 1, 2, 4, 5]  # w/o Dup: only the blank
    assert deduplicate([edited, a]) == [0]  # the first stays
    assert deduplicate(["", " \n"]) == []


def test_dedup_bounds_change_no_decision():
    """The greedy rule with every pair compared by the full DP gives the same kept texts."""
    rng = random.Random(11)
    base = "the tower was completed in 1889 for the world's fair in paris"
    for _ in range(40):
        texts = []
        for _ in range(6):
            chars = list(rng.choice([base, base[:30], base[10:]]))
            for _ in range(rng.randrange(0, 12)):
                chars[rng.randrange(len(chars))] = rng.choice("abcxyz ")
            texts.append(" ".join("".join(chars).split()))  # as deduplicate folds them
        threshold = rng.choice([0.6, 0.8, 0.9])
        kept: list[int] = []
        for i, t in enumerate(texts):
            if all(ngram_similarity(t, texts[j]) < threshold for j in kept):
                kept.append(i)
        assert deduplicate(texts, 2, threshold) == kept


def test_the_docstring_examples_hold():
    import doctest

    from labeler.metrics.seer import duplicates

    assert doctest.testmod(duplicates).failed == 0
