"""DPR-style has_answer (the correctness test of the utility labels and SEER's EM) and
SQuAD's unigram F1 (SEER's HotpotQA metric)."""

import unicodedata

import pytest

from labeler.metrics import answer_f1, answer_tokens, has_answer, squad_normalize


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


def test_squad_normalize_drops_case_punctuation_and_articles():
    assert squad_normalize("The Beatles!") == "beatles"
    assert squad_normalize("  An   apple, a day ") == "apple day"
    assert squad_normalize("theatre") == "theatre"  # an article only as a whole word


def test_answer_f1_is_squad_unigram_f1_maxed_over_answers():
    # "in 1901 to wilhelm röntgen": 5 tokens; gold "wilhelm conrad röntgen": 3; 2 common
    # P = 2/5, R = 2/3, F1 = 2PR/(P+R) = 0.5
    answers = ["Wilhelm Conrad Röntgen", "1902"]
    assert answer_f1("In 1901, to Wilhelm Röntgen.", answers) == pytest.approx(0.5)
    assert answer_f1("Röntgen", ["Wilhelm Conrad Röntgen", "Röntgen"]) == 1.0  # the best one
    # repeated tokens count once per occurrence in both: "yes yes" vs "yes": P 1/2, R 1
    assert answer_f1("yes yes", ["yes"]) == pytest.approx(2 / 3)
    assert answer_f1("the", ["a"]) == 0.0  # both normalise to nothing
    assert answer_f1("Paris", []) == 0.0
