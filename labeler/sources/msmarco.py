"""`msmarco-fqa`: MS MARCO QA v1.1 validation, factoid queries only (query types LOCATION,
NUMERIC, PERSON, ENTITY). `passages.is_selected` marks the human gold; the corpus pools the
passages of every row of the split (all query types), with pids `<query_id>_<position>`, so
pools do not change with --limit (pass --corpus msmarco-passage for the paper's 8.8M).

The answers are written sentences: `labeler build` needs `--answer-extractor MODEL` to reduce
them to entity answers first, as the paper did with Qwen3-32B
(labeler.sources.answer_extraction)."""

from __future__ import annotations

from labeler.sources.corpus import Corpus
from labeler.sources.hub_files import HUB_FILES
from labeler.sources.hubload import load_hub, read_from, rows
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source

FACTOID = ("LOCATION", "NUMERIC", "PERSON", "ENTITY")
NO_ANSWER = "No Answer Present."
#: MS MARCO's own terms (non-commercial research use only); its Hub card declares no licence.
LICENSE = "other"


def load_msmarco_fqa(*, limit: int | None = None) -> Source:
    """The factoid subset of MS MARCO v1.1 validation from the Hub."""
    dataset, revision = load_hub(HUB_FILES["msmarco-fqa"])
    return read_from(from_dataset(dataset, name="msmarco-fqa", revision=revision,
                                  license=LICENSE, limit=limit), HUB_FILES["msmarco-fqa"])


def from_dataset(
    dataset,
    *,
    name: str,
    revision: str,
    license: str = "unknown",
    limit: int | None = None,
    query_types: tuple[str, ...] = FACTOID,
) -> Source:
    """MS MARCO-layout rows -> Source: queries of `query_types` that have an answer."""
    queries, pool = [], {}
    for row in dataset:
        passages = rows(row["passages"])
        for i, p in enumerate(passages):
            pool.setdefault(f"{row['query_id']}_{i}", Passage(f"{row['query_id']}_{i}", "",
                                                            p["passage_text"]))
        answers = [a for a in row["answers"] if a and a != NO_ANSWER]
        if str(row["query_type"]).upper() not in query_types or not answers:
            continue
        if limit is not None and len(queries) >= limit:
            continue  # the corpus still takes every row
        gold = [pool[f"{row['query_id']}_{i}"] for i, p in enumerate(passages) if p["is_selected"]]
        queries.append(Query(str(row["query_id"]), row["query"], answers, gold))
    return Source(name, revision, queries, Corpus(list(pool.values())), license=license,
                  sentence_answers=True)
