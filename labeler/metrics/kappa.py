"""Cohen's kappa: how far two raters agree beyond what chance would give."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """κ = (p_o − p_e) / (1 − p_e) over items both rated, `first[i]` and `second[i]` the two
    ratings of item i: p_o the share rated alike, p_e = Σ_c p₁(c)·p₂(c) the share alike by
    chance from each rater's own category shares. None where it is undefined: no items, or
    p_e = 1 (both raters gave one and the same category throughout).

    >>> cohen_kappa(["agree", "agree", "disagree", "unsure"],
    ...             ["agree", "disagree", "disagree", "unsure"])  # p_o 3/4, p_e 5/16
    0.6363636363636364
    """
    if len(first) != len(second):
        raise ValueError(f"{len(first)} ratings against {len(second)}: pair them item by item")
    n = len(first)
    if not n:
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    one, two = Counter(first), Counter(second)
    chance = sum(one[c] * two[c] for c in one) / (n * n)
    return None if chance == 1 else (observed - chance) / (1 - chance)
