"""The rubric experiment's seeded query sample equals pandas' DataFrame.sample, which
cheat_at_search's run_strategy draws with."""

from __future__ import annotations

import pandas as pd
import pytest

from labeler.errors import InputError
from labeler.sources.sampling import seeded_sample
from labeler.sources.types import Query, Source


@pytest.mark.parametrize(("size", "n", "seed"), [(480, 100, 42), (480, 480, 42), (37, 5, 7)])
def test_the_sample_is_pandas(size, n, seed):
    source = Source("s", "r", [Query(str(i), f"query {i}", []) for i in range(size)], None)
    frame = pd.DataFrame({"query_id": [q.qid for q in source.queries]})
    expected = frame.sample(n, random_state=seed)["query_id"].tolist()
    assert [q.qid for q in seeded_sample(source, n, seed).queries] == expected


def test_more_than_there_are_is_refused():
    source = Source("s", "r", [Query("1", "q", [])], None)
    with pytest.raises(InputError, match="cannot sample 2 of 1 queries"):
        seeded_sample(source, 2)
