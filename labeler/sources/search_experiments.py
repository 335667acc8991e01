"""The rubric experiment's arms as softwaredoug/search-experiments' configs run them: one table,
each row naming the config file and the commit it was read from.

An arm retrieves with BM25 over its `fields` (labeler's names: the experiment's `description`
is a product's `text` here), and the decision arms rerank its top `k` with
`fused = BM25 + decision_weight · Σ c(P(yes))` over a rendered `state` (the document the
decision model is shown; `{title}`, `{description}`, `{query}` filled in). The bag arms ask the
LLM's generated questions, the direct arm one fixed question with true/false criteria;
`threshold` counts only P(yes) above it (the reranker's `confidence_threshold`).

The configs' YAML is transcribed as its loader reads it: a `|` block keeps its final newline
(the state formats, which the reranker's `format_map` renders unstripped), a `>-` block folds
its lines into one (the criteria), and the direct generator strips its question
(`DirectDecisionGenerator.__init__`: `question.strip()`).
"""

from __future__ import annotations

from dataclasses import dataclass

REPO = "softwaredoug/search-experiments"
#: the commit whose configs hold the direct arm as the issue reads it (its question, criteria
#: and state) and decision_weight 10 for the bag
CURRENT = "8734fde3b23ce17eafdf60b2f55dfa6bced47e43"
#: the commit whose exps/bag_of_decisions/strategy.py passes the bag's reranker
#: `confidence_threshold=reranker_config.get("confidence_threshold", 0.7)` (so too at f465397;
#: the reranker then counts P(yes) > t only): the bag's config sets none, so the bag ran at 0.7.
#: (bag_of_decisions_direct.yml's 0.7 @9ec1376 and f465397 is its direct arm's, another question.)
THRESHOLD_COMMIT = "8306f4f40df4e565cb552b7add225ee0580d6347"
#: the BM25 baseline's config (a commit of the newest snapshot's history) and strategy
BM25_COMMIT = "811dacb33846a5a63e85adb7622bf53bd2bf2494"
BM25_STRATEGY = ("exps/strategies/bm25.py", "49bec0c961df578b6b2f240922174578fbb6ebf4")

#: the bag arms' state: `state_format: |` then `{title}` / `{description}`
BAG_STATE = "{title}\n{description}\n"
#: the direct arm's state, its config's `state_format` block
DIRECT_STATE = ("Search query:\n{query}\n\nCandidate product:\nTitle: {title}\n"
                "Description: {description}\n")
#: the direct arm's one question, stripped as its generator strips it
DIRECT_QUESTION = 'Does this candidate product satisfy the search query "{query}"?'
#: the direct arm's criteria, each `>-` block folded into one line
DIRECT_CRITERIA = {
    "true": "The candidate is the requested product type and satisfies the query's key "
            "shopping intent and explicit constraints.",
    "false": "The candidate is a different product type, conflicts with an explicit "
             "constraint, or only overlaps with incidental query terms.",
}
#: `retrieval_engine: {base: bm25_boosted, params: {fields: [title^9.4, description^4]}}`
DECISION_BM25 = "title^9.4,text^4"
#: BM25Strategy's `title_boost: 9.3`, `description_boost: 4.1`
BASELINE_BM25 = "title^9.3,text^4.1"


@dataclass(frozen=True)
class Arm:
    """One arm of the experiment as its config runs it."""

    config: str  # the config file, in REPO
    commit: str  # the commit it was read from
    fields: str  # BM25 fields and boosts, labeler's names
    generator: str | None = None  # "llm" (the bag), "direct", or None (BM25 alone)
    k: int | None = None  # the BM25 top k the reranker scores
    decision_weight: float | None = None
    state: str | None = None  # the state format
    threshold: float | None = None  # only P(yes) above it counted


ARMS: dict[str, Arm] = {
    "bm25": Arm("configs/ecom_base/bm25.yml", BM25_COMMIT, BASELINE_BM25),
    "bag": Arm("configs/ecom_decisions/bag_of_decisions.yml", CURRENT, DECISION_BM25,
               "llm", 100, 10.0, BAG_STATE),
    "threshold": Arm("configs/ecom_decisions/bag_of_decisions.yml", THRESHOLD_COMMIT,
                     DECISION_BM25, "llm", 100, 10.0, BAG_STATE, 0.7),
    "direct": Arm("configs/ecom_decisions/bag_of_decisions_direct.yml", CURRENT,
                  DECISION_BM25, "direct", 100, 10.0, DIRECT_STATE),
}


def render_state(state: str, *, title: str, description: str, query: str) -> str:
    """An arm's state for one product, as the reranker's `format_map` renders it.

    >>> render_state(BAG_STATE, title="Oak desk", description="A desk.", query="desk")
    'Oak desk\\nA desk.\\n'
    """
    return state.format_map({"title": title, "description": description, "query": query})
