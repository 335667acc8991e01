"""SEER's de-duplication of sampled extractions by Kondrak's n-gram similarity.

SEER removes duplicates among the M sampled extractions "using n-gram similarity (Kondrak,
2005)" so that head responses do not dominate the preference data. Kondrak's measure
(G. Kondrak, "N-Gram Similarity and Distance", SPIRE 2005) generalises the longest common
subsequence from characters to character n-grams: with n − 1 pad symbols put before each
string (affixing), Γ_i is the n-gram ending at character i, and

    S(i, j) = max(S(i−1, j), S(i, j−1), S(i−1, j−1) + s(Γ_i, Γ'_j)),  S(i, 0) = S(0, j) = 0,

where s is the positional n-gram similarity: the share of the n aligned positions holding the
same character, positions where both n-grams hold a pad not counted (as Lucene's and
java-string-similarity's NGram do). The similarity is S(K, L) / max(K, L) ∈ [0, 1] for strings
of K and L characters; n = 1 gives LCS / max(K, L).

SEER's code does not state n or the threshold, so the defaults are ours: bigrams (Kondrak's
best measure in his experiments, BI-SIM) and 0.8 — two extractions are duplicates when 80% of
the longer one's characters align, in order, with the other's (the same copied sentences with
a short preamble or a dropped clause), while an extraction that adds or drops a sentence of
similar length falls near 0.5 and stays, as SEER wants extractions of varying length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from labeler.lazy import LazyModule

#: imported on first use, so that reading this module (`build --help` does) stays cheap
np = LazyModule("numpy")

#: defaults: Kondrak's bigrams, and the similarity from which a sample is a duplicate
NGRAM = 2
DUPLICATE_AT = 0.8
_PAD, _X_END, _Y_END = -1, -2, -3  # the affix, and fillers that never match a character


def ngram_similarity(x: str, y: str, n: int = NGRAM) -> float:
    """Kondrak's n-gram similarity of `x` and `y` (the module's definition), in [0, 1]; two
    empty strings are identical (1.0).

    ABCD and ABTUIO in bigrams align ⟨pad A⟩, ⟨AB⟩ fully and ⟨BC⟩ with ⟨BT⟩ by half:
    S = 2.5, over max(4, 6) = 6 characters (1 − 0.5833, java-string-similarity's and
    strsimpy's NGram(2) distance of this pair, which here takes the same alignment):

    >>> round(ngram_similarity("ABCD", "ABTUIO", 2), 4)
    0.4167
    >>> ngram_similarity("abc", "abc", 3), ngram_similarity("abc", "xyz", 3)
    (1.0, 0.0)
    """
    return float(_similarities([x], [y], n)[0])


def deduplicate(texts: Sequence[str], n: int = NGRAM, threshold: float | None = DUPLICATE_AT
                ) -> list[int]:
    """Indices of the texts kept, in order: blank texts are dropped; a text whose n-gram
    similarity with an earlier kept one is at least `threshold` is a duplicate (the first
    stays). Texts compare case-folded with their whitespace collapsed. With `threshold` None
    every non-blank text stays (SEER's "w/o Dup" ablation).

    The DP runs only where a duplicate is possible: S ≤ min(K, L), and S ≤ LCS + n − 1 (for
    each offset u the matched u-th characters of the aligned n-grams form a common
    subsequence; only the first n − 1 rows hold pads), so a pair whose bound is under
    `threshold` · max(K, L) is not compared further.
    """
    folded = [" ".join(t.casefold().split()) for t in texts]
    undecided = [i for i, t in enumerate(folded) if t]
    if threshold is None:
        return undecided
    kept: list[int] = []
    while undecided:  # the first undecided text is no kept one's duplicate: it stays
        first, *undecided = undecided
        kept.append(first)
        x = folded[first]
        bound = [j for j in undecided
                 if folded[j] != x and _could_match(x, folded[j], n, threshold)]
        similar = {j: 1.0 for j in undecided if folded[j] == x}  # exact repeats
        similar.update(zip(bound, _similarities([x] * len(bound), [folded[j] for j in bound],
                                                n)))
        undecided = [j for j in undecided if similar.get(j, 0.0) < threshold]
    return kept


def _could_match(x: str, y: str, n: int, threshold: float) -> bool:
    """Whether the bounds (`deduplicate`'s) allow S ≥ `threshold` · max(K, L)."""
    least = threshold * max(len(x), len(y))
    return min(len(x), len(y)) >= least and _lcs_length(x, y) + n - 1 >= least


def _lcs_length(x: str, y: str) -> int:
    """The length of the longest common subsequence of `x` and `y`, bit-parallel (Hyyrö's
    variant of Allison and Dix): one bit a character of x, a few integer operations a
    character of y."""
    where: dict[str, int] = {}
    for bit, c in enumerate(x):
        where[c] = where.get(c, 0) | 1 << bit
    full = (1 << len(x)) - 1
    v = full
    for c in y:
        u = v & where.get(c, 0)
        v = ((v + u) | (v - u)) & full
    return len(x) - v.bit_count()


def _similarities(xs: Sequence[str], ys: Sequence[str], n: int) -> np.ndarray:
    """`ngram_similarity(xs[p], ys[p], n)` for every p, as one DP over all pairs at once, in
    integers (S times `scale`, which every positional share fits). The shorter strings are
    filled at the end; S(K, L) of a pair is read once its K rows are done, at column L, so
    the filler never counts. A row of S is the running maximum of the diagonal and vertical
    moves, since a horizontal move adds nothing."""
    if not xs:
        return np.zeros(0)
    x, x_len = _codes(xs, n, _X_END)
    y, y_len = _codes(ys, n, _Y_END)
    pairs, width = len(xs), y.shape[1] - (n - 1)
    scale = math.lcm(*range(1, n + 1))
    # y's n-grams position by position: shifted[u][p, j] is character u of y_p's n-gram j
    shifted = [y[:, u:u + width] for u in range(n)]
    previous = np.zeros((pairs, width + 1), dtype=np.int32)
    current = np.zeros_like(previous)
    gain = np.empty((pairs, width), dtype=np.int32)
    same = np.empty((pairs, width), dtype=bool)
    found = np.zeros(pairs, dtype=np.int64)
    finished: dict[int, list[int]] = {}  # row -> the pairs whose S(K, ·) it completes
    for p, length in enumerate(x_len):
        finished.setdefault(int(length) - 1, []).append(p)
    for i in range(int(x_len.max())):
        gain.fill(0)
        counted = n  # the positions compared: a pad on both sides is not counted
        for u in range(n):
            np.equal(shifted[u], x[:, i + u, None], out=same)
            if i + u < n - 1:  # x holds a pad here
                counted = counted - same
            else:
                gain += same
        if i < n - 1:
            gain[:] = gain * scale // counted
        elif scale != n:
            gain *= scale // n
        np.add(previous[:, :-1], gain, out=current[:, 1:])
        np.maximum(current[:, 1:], previous[:, 1:], out=current[:, 1:])
        np.maximum.accumulate(current[:, 1:], axis=1, out=current[:, 1:])
        for p in finished.get(i, ()):
            found[p] = current[p, y_len[p]]
        previous, current = current, previous
    longest = np.maximum(x_len, y_len)
    return np.where(longest > 0, found / scale / np.maximum(longest, 1), 1.0)


def _codes(texts: Sequence[str], n: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """The texts' code points, each after n − 1 pads and filled to one width with `end`; and
    their lengths."""
    codes = [np.frombuffer(t.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
             for t in texts]
    lengths = np.array([len(c) for c in codes])
    table = np.full((len(texts), n - 1 + int(lengths.max(initial=0))), end, dtype=np.int64)
    table[:, :n - 1] = _PAD
    for row, c in zip(table, codes):
        row[n - 1:n - 1 + len(c)] = c
    return table, lengths
