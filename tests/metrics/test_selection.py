"""Selection metrics on hand examples: the utility paper's P̄, R̄, F1 and empty-gold accuracy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labeler.metrics.selection import selection_metrics

# CISI query 1's first relevant documents (tests/scoring/fixtures/cisi.qrels) as a gold set.
GOLD = {
    "1": ["28", "35", "38", "42"],  # 4 gold documents
    "2": ["29", "68"],  # 2 gold documents
    "77": [],  # no gold: the right answer is to select nothing
    "78": [],
}


def test_hand_example_with_duplicates_empty_selection_and_empty_gold():
    selected = {
        "1": ["28", "35", "35", "99"],  # duplicate "35" counts once: S = {28, 35, 99}
        "2": [],  # empty selection: P = 0, R = 0
        "77": [],  # empty gold, nothing selected: accuracy 1
        "78": ["5"],  # empty gold, something selected: accuracy 0
    }
    s = selection_metrics(selected, GOLD)
    np.testing.assert_allclose(s.precision[:2], [2 / 3, 0.0])
    np.testing.assert_allclose(s.recall[:2], [2 / 4, 0.0])
    np.testing.assert_allclose(s.f1[:2], [2 * (2 / 3) * 0.5 / (2 / 3 + 0.5), 0.0])
    assert np.isnan(s.precision[2:]).all() and np.isnan(s.accuracy[:2]).all()
    summary = s.summary()
    p, r = (2 / 3 + 0) / 2, (0.5 + 0) / 2
    assert summary["precision"] == pytest.approx(p)
    assert summary["recall"] == pytest.approx(r)
    assert summary["f1"] == pytest.approx(2 * p * r / (p + r))  # F1 of the means, not mean F1
    assert summary["mean_f1"] == pytest.approx((4 / 7 + 0) / 2)
    assert summary["empty_gold_accuracy"] == 0.5
    assert s.counts() == {"queries_with_gold": 2, "queries_empty_gold": 2}


def test_ids_compare_as_strings():
    s = selection_metrics({"1": [28, "35"]}, {"1": ["28", 35]})
    assert s.precision[0] == 1.0 and s.recall[0] == 1.0


def test_missing_query_scores_zero_even_with_empty_gold():
    s = selection_metrics({"1": ["28"]}, GOLD)  # "2", "77", "78" absent
    assert s.precision[1] == 0.0 and s.recall[1] == 0.0
    assert list(s.accuracy[2:]) == [0.0, 0.0]


def test_nothing_right_gives_zero_f1_and_no_gold_gives_nan():
    assert selection_metrics({"2": ["1"]}, {"2": ["29"]}).summary()["f1"] == 0.0
    summary = selection_metrics({"77": []}, {"77": []}).summary()
    assert math.isnan(summary["f1"]) and summary["empty_gold_accuracy"] == 1.0


def test_qids_choose_and_order_the_queries():
    s = selection_metrics({"1": ["28"], "2": ["29"]}, GOLD, qids=["2", "1"])
    assert s.qids == ["2", "1"]
    np.testing.assert_allclose(s.recall, [0.5, 0.25])
