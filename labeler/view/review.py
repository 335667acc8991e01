"""The `review` artifact kind: people's verdicts on a labels version, one record a verdict
on one thing it says about a query (`about`: the query's labels, a candidate's, a SEER
extraction; schemas/review.schema.json), its manifest naming the labels' version and the
sha256 of their manifest.json."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import ClassVar

from labeler.artifacts.kinds import ArtifactKind
from labeler.review_format import ABOUT, VERDICTS, current


class ReviewKind(ArtifactKind):
    """The `review` kind: a record per (reviewer, llm, qid, about, pid), its latest verdict."""

    name = "review"
    rows: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("verdicts", "verdicts", "count"),
        ("agree", "agree", "count"),
        ("disagree", "disagree", "count"),
        ("unsure", "unsure", "count"),
        ("agreement", "agreement with the labels", "share"),
    )
    metadata: ClassVar[dict] = {
        "pretty_name": "Human verdicts on LLM-specific labels",
        "task_categories": ["question-answering", "text-retrieval"],
        "tags": ["rag", "human-review", "labeler"],
    }

    @staticmethod
    def statistics(records: Iterable[dict]) -> dict:
        """`verdicts`, each verdict's count, `about` (the verdicts on each thing judged),
        `queries`, `reviewers` (sorted) and `agreement`: agree / (agree + disagree), None
        without either."""
        counts: Counter = Counter()
        about: Counter = Counter()
        queries, reviewers = set(), set()
        for record in map(current, records):
            counts[record["verdict"]] += 1
            about[record["about"]] += 1
            queries.add(record["qid"])
            reviewers.add(record["reviewer"])
        judged = counts["agree"] + counts["disagree"]
        return {"verdicts": sum(counts.values()), **{v: counts[v] for v in VERDICTS},
                "about": {name: about[name] for name in ABOUT if about[name]},
                "queries": len(queries), "reviewers": sorted(reviewers),
                "agreement": counts["agree"] / judged if judged else None}
