"""Cohen's kappa on hand-counted examples."""

from __future__ import annotations

import pytest

from labeler.metrics.kappa import cohen_kappa


def test_kappa_of_hand_counted_ratings():
    # p_o = 3/4; rater 1: agree 2, disagree 1, unsure 1; rater 2: agree 1, disagree 2, unsure 1
    # p_e = (2·1 + 1·2 + 1·1) / 16 = 5/16
    assert cohen_kappa(["agree", "agree", "disagree", "unsure"],
                       ["agree", "disagree", "disagree", "unsure"]) == pytest.approx(
        (3 / 4 - 5 / 16) / (1 - 5 / 16))
    assert cohen_kappa(["agree", "disagree"], ["agree", "disagree"]) == 1.0
    assert cohen_kappa(["agree", "disagree"], ["disagree", "agree"]) == -1.0


def test_kappa_is_none_where_undefined_and_pairs_must_match():
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["agree", "agree"], ["agree", "agree"]) is None  # p_e = 1
    with pytest.raises(ValueError, match="item by item"):
        cohen_kappa(["agree"], [])
