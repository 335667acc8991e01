"""Paired t-test and win/tie/loss counts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from labeler.metrics.significance import paired_t_test


def test_matches_scipy_and_counts_wins_ties_losses():
    rng = np.random.default_rng(7)
    a = rng.random(50)
    b = a + rng.normal(0.05, 0.1, 50)
    b[:5] = a[:5]  # five ties
    r = paired_t_test(a, b)
    want = stats.ttest_rel(a, b)
    assert r.t == pytest.approx(want.statistic, abs=1e-12)
    assert r.p == pytest.approx(want.pvalue, abs=1e-12)
    assert r.ties == 5 and r.wins + r.losses == 45 and r.n == 50
    assert r.wins == int(np.sum(a - b > 1e-12))


def test_nan_pairs_are_left_out():
    a = np.array([1.0, np.nan, 0.5, 0.2])
    b = np.array([0.0, 1.0, np.nan, 0.1])
    r = paired_t_test(a, b)
    assert r.n == 2 and r.mean_a == pytest.approx(0.6) and r.mean_b == pytest.approx(0.05)


def test_degenerate_cases():
    same = paired_t_test(np.array([0.3, 0.7]), np.array([0.3, 0.7]))
    assert (same.t, same.p, same.ties) == (0.0, 1.0, 2)
    shifted = paired_t_test(np.array([1.0, 1.0, 1.0]), np.array([0.0, 0.0, 0.0]))
    assert shifted.p == 0.0 and shifted.t == math.inf and shifted.wins == 3
    one = paired_t_test(np.array([1.0]), np.array([0.0]))
    assert math.isnan(one.p) and one.wins == 1


def test_as_dict_is_json_even_when_the_test_degenerates():
    """A rubric whose every query beats BM25 by the same NDCG gives t = inf; its manifest
    must still be written (strict JSON refuses inf and NaN)."""
    import json

    shifted = paired_t_test(np.array([1.0, 1.0]), np.array([0.0, 0.0])).as_dict()
    assert shifted["t"] is None and shifted["p"] == 0.0
    assert json.loads(json.dumps(shifted, allow_nan=False)) == shifted
    assert paired_t_test(np.array([1.0]), np.array([0.0])).as_dict()["p"] is None
