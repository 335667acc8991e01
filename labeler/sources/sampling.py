"""The rubric experiment's query sample: N queries drawn with a seed, as cheat_at_search's
`run_strategy` draws them (`available_queries.sample(N, random_state=seed)`)."""

from __future__ import annotations

from dataclasses import replace

from labeler.errors import InputError
from labeler.lazy import LazyModule
from labeler.sources.types import Source

#: imported on first use, so that reading this module (`build --help` does) stays cheap
np = LazyModule("numpy")

#: run_strategy's default seed
SEED = 42


def seeded_sample(source: Source, n: int, seed: int = SEED) -> Source:
    """`source` with `n` of its queries, those pandas' `DataFrame.sample(n, random_state=seed)`
    draws from them in order (`drawn`), in the order drawn; a source its loader drew so
    already (`Source.drawn`, ESCI's: in Arrow) as it is."""
    if source.drawn == (n, seed):
        return source
    picked = drawn(len(source.queries), n, seed)
    return replace(source, queries=[source.queries[i] for i in picked], drawn=(n, seed))


def drawn(count: int, n: int, seed: int = SEED) -> np.ndarray:
    """The positions of the `n` of `count` queries the experiment draws, in the order drawn:
    numpy's `RandomState(seed).permutation(count)[:n]`, as pandas' `DataFrame.sample(n,
    random_state=seed)` draws them; InputError when there are fewer than `n`."""
    if not 1 <= n <= count:
        raise InputError(f"cannot sample {n} of {count} queries", field_name="sample")
    return np.random.RandomState(seed).permutation(count)[:n]
