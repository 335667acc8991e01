"""`nq-tevatron` and `tq-tevatron-distant`: Natural Questions and TriviaQA in Tevatron's
wikipedia-nq / wikipedia-trivia layout: `{query_id, query, answers, positive_passages,
negative_passages}`, passages `{docid, title, text}` with psgs_w100 docids. The positive
passages are the gold; the corpus pools every positive and negative passage of the whole
split, whatever `limit` loads, so pools do not change with --limit (pass --corpus wiki-dpr
for the paper's full Wikipedia corpus).

The positives are DPR's: for NQ, the psgs_w100 chunks matched to the human-annotated gold
context; for TriviaQA, retrieved passages that contain an answer string (distant
supervision, not human gold), hence `-distant`. The paper's `nq` and `tq` are KILT's
(labeler.sources.kilt)."""

from __future__ import annotations

from labeler.sources.corpus import Corpus
from labeler.sources.hub_files import HUB_FILES
from labeler.sources.hubload import head, load_hub, read_from, rows
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source

#: Tevatron's Hub cards declare none, so the questions' own: Natural Questions is CC BY-SA 3.0
#: (google-research-datasets/natural-questions); TriviaQA's README: "The Apache 2.0 License
#: applies to both the code and the data" (mandarjoshi90/triviaqa).
LICENSE = {"nq": "cc-by-sa-3.0", "tq": "apache-2.0"}


def load_nq(*, limit: int | None = None) -> Source:
    """NQ dev from Tevatron/wikipedia-nq."""
    dataset, revision = load_hub(HUB_FILES["nq-tevatron"])
    return read_from(from_dataset(dataset, name="nq-tevatron", revision=revision,
                                  license=LICENSE["nq"], limit=limit), HUB_FILES["nq-tevatron"])


def load_tq(*, limit: int | None = None) -> Source:
    """TriviaQA dev from Tevatron/wikipedia-trivia; its gold is distant supervision."""
    spec = HUB_FILES["tq-tevatron-distant"]
    dataset, revision = load_hub(spec)
    return read_from(from_dataset(dataset, name="tq-tevatron-distant", revision=revision,
                                  license=LICENSE["tq"], limit=limit), spec)


def from_dataset(dataset, *, name: str, revision: str, license: str = "unknown",
                 limit: int | None = None) -> Source:
    """Tevatron-layout rows (a `datasets.Dataset`, Hub or local) -> Source: the first `limit`
    queries, the corpus of every row's passages."""
    pool = {}
    for row in dataset:
        for p in _passages(row["positive_passages"]) + _passages(row.get("negative_passages")):
            pool.setdefault(p.pid, p)
    queries = [Query(str(row["query_id"]), row["query"], list(row["answers"]),
                     [pool[p.pid] for p in _passages(row["positive_passages"])])
               for row in head(dataset, limit)]
    return Source(name, revision, queries, Corpus(list(pool.values())), license=license)


def _passages(value) -> list[Passage]:
    """Distinct passages by docid, in order (DPR-derived lists repeat some)."""
    unique = {}
    for p in rows(value):
        unique.setdefault(str(p["docid"]), Passage(str(p["docid"]), p["title"], p["text"]))
    return list(unique.values())
