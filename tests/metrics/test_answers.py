"""DPR-style has_answer: the correctness test of the utility labels."""

import unicodedata

from labeler.metrics import answer_tokens, has_answer


def test_composed_and_decomposed_accents_match():
    composed = unicodedata.normalize("NFC", "Beyoncé")
    decomposed = unicodedata.normalize("NFD", "Beyoncé")
    assert composed != decomposed
    assert has_answer(f"It was {composed}.", [decomposed])
    assert has_answer(f"It was {decomposed}.", [composed])


def test_accents_are_not_stripped():
    # DPR keeps combining marks inside the token: "beyonce" is another word.
    assert not has_answer("Beyoncé Knowles", ["beyonce"])


def test_case_and_punctuation_are_separate_tokens():
    assert has_answer("PARIS, France.", ["paris"])
    assert answer_tokens("U.S.") == ["u", ".", "s", "."]
    assert has_answer("the U.S. army", ["U.S."])


def test_multi_token_answer_must_be_contiguous():
    # NQ-open: "who wrote the declaration of independence" -> "Thomas Jefferson"
    assert has_answer("It was written by Thomas Jefferson in 1776", ["Thomas Jefferson"])
    assert not has_answer("Thomas Paine and Jefferson", ["Thomas Jefferson"])


def test_no_match_inside_a_token():
    assert not has_answer("Parisian cafes", ["Paris"])
    assert not has_answer("1776s", ["1776"])


def test_any_of_several_answers_and_empty_answers():
    assert has_answer("about 14 million", ["14.5 million", "14 million"])
    assert not has_answer("anything", ["", "  "])
    assert not has_answer("", ["Paris"])
