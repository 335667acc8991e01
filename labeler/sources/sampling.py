"""The rubric experiment's query sample: N queries drawn with a seed, as cheat_at_search's
`run_strategy` draws them (`available_queries.sample(N, random_state=seed)`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from labeler.errors import InputError
from labeler.sources.types import Source

#: run_strategy's default seed
SEED = 42


def seeded_sample(source: Source, n: int, seed: int = SEED) -> Source:
    """`source` with `n` of its queries, those pandas' `DataFrame.sample(n, random_state=seed)`
    draws from them in order (numpy's `RandomState(seed).permutation(len)[:n]`), in the order
    drawn; InputError when it has fewer than `n`."""
    if not 1 <= n <= len(source.queries):
        raise InputError(f"cannot sample {n} of {len(source.queries)} queries", field_name="sample")
    drawn = np.random.RandomState(seed).permutation(len(source.queries))[:n]
    return replace(source, queries=[source.queries[i] for i in drawn])
