"""The rubric experiment's arms against its configs, transcribed from
softwaredoug/search-experiments (read with the search tools' `read_file` at the commits named):
each config's text below is the file's, parsed by a real YAML loader, so `|` blocks keep their
newline and `>-` blocks fold as the experiment's loader reads them."""

from __future__ import annotations

import yaml

from labeler.sources.passage import Passage
from labeler.sources.search_experiments import (
    ARMS,
    BM25_COMMIT,
    CURRENT,
    THRESHOLD_COMMIT,
)
from labeler.tasks.rubric_judge import JUDGE_SYSTEM, bag_state, direct_prompt

#: configs/ecom_decisions/bag_of_decisions.yml @ 8734fde3b23ce17eafdf60b2f55dfa6bced47e43
BAG = '''strategy:
  name: bag_of_decisions_example
  type: bag_of_decisions
  params:
    decision_engine:
      generator:
        type: llm
        model: gpt-5
      reranker:
        decision_model: jev/jev-latest
        decision_weight: 10
        k: 100
        state_format: |
          {title}
          {description}
    retrieval_engine:
      base: bm25_boosted
      params:
        fields: [title^9.4, description^4]
'''
#: configs/ecom_decisions/bag_of_decisions_direct.yml @ 8734fde3b23ce17eafdf60b2f55dfa6bced47e43
DIRECT = '''strategy:
  name: bag_of_decisions_direct
  type: bag_of_decisions
  params:
    decision_engine:
      generator:
        type: direct
        question: |
          Does this candidate product satisfy the search query "{query}"?
        criteria:
          "true": >-
            The candidate is the requested product type and satisfies the query's
            key shopping intent and explicit constraints.
          "false": >-
            The candidate is a different product type, conflicts with an explicit
            constraint, or only overlaps with incidental query terms.
      reranker:
        decision_model: jev/jev-latest
        decision_weight: 10
        k: 100
        state_format: |
          Search query:
          {query}

          Candidate product:
          Title: {title}
          Description: {description}
    retrieval_engine:
      base: bm25_boosted
      params:
        fields: [title^9.4, description^4]
'''
#: exps/bag_of_decisions/strategy.py @ 8306f4f40df4e565cb552b7add225ee0580d6347 (the same line
#: at f46539704fbc8f2db3214f00a383cbb6216e61b7): the bag's config sets no confidence_threshold
#: (neither stored version of bag_of_decisions.yml does), so the bag counted P(yes) > 0.7 only
THRESHOLD_LINE = '''            confidence_threshold=reranker_config.get("confidence_threshold", 0.7),'''
#: configs/ecom_decisions/bag_of_decisions_direct.yml @ 9ec1376781031f0354076400f0cfbdafbec2df6b:
#: the threshold set there is the direct arm's, asking its own question, not the bag's
DIRECT_9EC1376 = '''strategy:
  name: bag_of_decisions_direct
  type: bag_of_decisions
  params:
    decision_engine:
      generator:
        type: direct
        question: |
          Is this document relevant to the search query: {query}?
        criteria:
          "true": The product matches the product type and shopping intent expressed in the query.
          "false": The product is from a different category, contradicts an explicit constraint, or only shares incidental keywords.
      reranker:
        decision_model: jev/jev-latest
        decision_weight: 10
        confidence_threshold: 0.7
        k: 100
        state_format: |
          {title}
          {description}
    retrieval_engine:
      base: bm25_boosted
      params:
        fields: [title^9.4, description^4]
'''
#: configs/ecom_base/bm25.yml @ 811dacb33846a5a63e85adb7622bf53bd2bf2494
BM25 = '''strategy:
  name: bm25
  type: bm25
  params:
    k1: 1.2
    b: 0.75
    title_boost: 9.3
    description_boost: 4.1
'''


def _params(text: str) -> dict:
    return yaml.safe_load(text)["strategy"]["params"]


def _fields(params: dict) -> str:
    """[title^9.4, description^4] in labeler's names (description is a product's text)."""
    return ",".join(f.replace("description", "text")
                    for f in params["retrieval_engine"]["params"]["fields"])


def test_each_arm_is_its_config_at_the_commit_it_names():
    for arm, text, commit in (("bag", BAG, CURRENT), ("direct", DIRECT, CURRENT)):
        params, row = _params(text), ARMS[arm]
        reranker = params["decision_engine"]["reranker"]
        assert row.commit == commit and row.config.startswith("configs/ecom_decisions/")
        assert params["retrieval_engine"]["base"] == "bm25_boosted"
        assert row.fields == _fields(params) == "title^9.4,text^4"
        assert (row.k, row.decision_weight) == (reranker["k"], reranker["decision_weight"])
        assert row.state == reranker["state_format"]  # rendered unstripped: format_map
        assert row.threshold == reranker.get("confidence_threshold")
    baseline = _params(BM25)
    assert ARMS["bm25"].commit == BM25_COMMIT and ARMS["bm25"].config.endswith("bm25.yml")
    assert ARMS["bm25"].fields == \
        f"title^{baseline['title_boost']},text^{baseline['description_boost']}"
    assert ARMS["bm25"].generator is None and ARMS["bm25"].k is None



def test_the_threshold_arm_is_the_bag_at_the_strategy_default_not_the_direct_config():
    """The 0.7 that the bag ran with is strategy.py's default (its config sets none); the one in
    bag_of_decisions_direct.yml @9ec1376 is that file's direct arm, asking its own question."""
    row, bag = ARMS["threshold"], ARMS["bag"]
    assert (row.config, row.commit) == (bag.config, THRESHOLD_COMMIT)
    assert "confidence_threshold" not in _params(BAG)["decision_engine"]["reranker"]
    default = float(THRESHOLD_LINE.rsplit(",", 2)[-2].strip(" )"))
    bag_state = _params(BAG)["decision_engine"]["reranker"]["state_format"]
    assert (row.generator, row.state, row.threshold) == ("llm", bag_state, default)
    assert (row.fields, row.k, row.decision_weight) == (bag.fields, bag.k, bag.decision_weight)
    direct_then = _params(DIRECT_9EC1376)["decision_engine"]
    assert direct_then["generator"]["type"] == "direct"
    assert direct_then["reranker"]["confidence_threshold"] == 0.7

def test_the_direct_arm_asks_its_question_on_its_state_byte_for_byte():
    generator = _params(DIRECT)["decision_engine"]["generator"]
    state = _params(DIRECT)["decision_engine"]["reranker"]["state_format"]
    product = Passage("p1", "Oak desk {x}", "A desk.\nTwo drawers.")
    query = 'kids "desk"'
    system, shown, asked = direct_prompt(query, product)
    assert system.content == JUDGE_SYSTEM
    # DecisionReranker._state: state_format.format_map({**document, "query": query})
    assert shown.content == state.format_map({"title": product.title, "query": query,
                                              "description": product.text})
    assert shown.content == ('Search query:\nkids "desk"\n\nCandidate product:\n'
                             'Title: Oak desk {x}\nDescription: A desk.\nTwo drawers.\n')
    # DirectDecisionGenerator: question.strip().format(query=query); criteria stripped
    question = generator["question"].strip().format(query=query)
    assert question == 'Does this candidate product satisfy the search query "kids "desk""?'
    assert asked.content == (f"{question}\n\nYes: {generator['criteria']['true'].strip()}\n"
                             f"No: {generator['criteria']['false'].strip()}\n\n"
                             "Answer yes or no.")
    assert bag_state(query, product) == "Oak desk {x}\nA desk.\nTwo drawers.\n"
