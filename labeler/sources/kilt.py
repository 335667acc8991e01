"""`fever`: FEVER claims from KILT (facebook/kilt_tasks, fever, validation). Answers are the
verdicts (SUPPORTS / REFUTES); KILT provenance carries no passage text, so there is no human
gold and no corpus: pools come from retrieval over --corpus (or a --run)."""

from __future__ import annotations

from labeler.sources import Query, Source
from labeler.sources.hubload import head, load_hub

HUB = ("facebook/kilt_tasks", "fever", "validation")
#: The claims are FEVER's, released under Wikipedia's terms, else CC BY-SA 3.0 (the FEVER
#: licence; the Hub's `fever` card). The "mit" on facebook/kilt_tasks' card is KILT's, which
#: repackages them.
LICENSE = "cc-by-sa-3.0"


def load_fever(*, limit: int | None = None) -> Source:
    """KILT FEVER validation from the Hub."""
    repo, config, split = HUB
    dataset, revision = load_hub(repo, config=config, split=split)
    return from_dataset(dataset, name="fever", revision=revision, license=LICENSE, limit=limit)


def from_dataset(dataset, *, name: str, revision: str, license: str = "unknown",
                 limit: int | None = None) -> Source:
    """KILT-layout rows `{id, input, output[{answer, provenance}]}` -> Source without corpus."""
    queries = []
    for row in head(dataset, limit):
        answers = list(dict.fromkeys(o["answer"] for o in row["output"] if o.get("answer")))
        queries.append(Query(str(row["id"]), row["input"], answers))
    return Source(name, revision, queries, None, license=license)
