"""Paired significance test of two systems' per-query scores."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from labeler.lazy import LazyModule

#: imported on first use, so that reading this module (`build --help` does) stays cheap
np = LazyModule("numpy")

#: Two per-query values closer than this are a tie.
TIE = 1e-12


@dataclass(frozen=True)
class PairedTest:
    """A two-sided paired t-test of `a` against `b`, with win/tie/loss counts of `a`."""

    n: int  # queries where both values apply
    mean_a: float
    mean_b: float
    t: float  # NaN when undefined (fewer than 2 queries)
    p: float
    wins: int
    ties: int
    losses: int

    def as_dict(self) -> dict:
        """The fields as JSON takes them: an undefined or infinite t (or mean) becomes None."""
        return {k: None if isinstance(v, float) and not np.isfinite(v) else v
                for k, v in asdict(self).items()}


def paired_t_test(a: np.ndarray, b: np.ndarray) -> PairedTest:
    """Two-sided paired t-test (scipy.stats.ttest_rel) over queries where both are not NaN.

    t = mean(d) / (sd(d) / √n) with d = a − b. When every difference is the same, the test
    degenerates: p = 1 if d ≡ 0, else p = 0 (t = ±inf). A win is d > 1e-12.

    >>> r = paired_t_test(np.array([1.0, 0.5, 1.0]), np.array([0.0, 0.5, 0.5]))
    >>> (r.wins, r.ties, r.losses), round(r.p, 3)
    ((2, 1, 0), 0.225)
    """
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = np.asarray(a, dtype=np.float64)[keep], np.asarray(b, dtype=np.float64)[keep]
    d = a - b
    n = int(d.size)
    wins, losses = int(np.sum(d > TIE)), int(np.sum(d < -TIE))
    if n < 2:
        t = p = float("nan")
    elif np.all(d == d[0]):
        t = 0.0 if d[0] == 0 else float(np.copysign(np.inf, d[0]))
        p = 1.0 if d[0] == 0 else 0.0
    else:
        from scipy import stats  # slow to import; only needed here

        result = stats.ttest_rel(a, b)
        t, p = float(result.statistic), float(result.pvalue)
    return PairedTest(
        n=n,
        mean_a=float(a.mean()) if n else float("nan"),
        mean_b=float(b.mean()) if n else float("nan"),
        t=t,
        p=p,
        wins=wins,
        ties=n - wins - losses,
        losses=losses,
    )
