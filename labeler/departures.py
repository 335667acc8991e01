"""Every place a method here still differs from its source, each with the line of the source it
departs from: the one list that docs/departures.md shows and each artifact's card renders
(`paper_departures`, `labeler.artifacts.card`); tests/test_departures.py checks both against
it and it against the code.

A source is named as `repository file:line @commit` (the search tools' stored versions), or as a
paper's section in shared/seeds.
"""

from __future__ import annotations

from typing import NamedTuple

from labeler.sources.search_experiments import (
    ARMS,
    BM25_STRATEGY,
    CURRENT,
    REPO,
)

UTILITY = "hengran/LLM_specific_utility"
UTILITY_COMMIT = "27a07e31"
SEARCH = REPO
SEER = "SEER (Zhao et al., EMNLP 2024)"
DPR_DOWNLOADS = "facebookresearch/DPR dpr/data/download_data.py @1ee31c6"


class Departure(NamedTuple):
    """What differs here and what it changes; the source line it departs from."""

    text: str
    source: str


_GEN = f"{SEARCH} exps/bag_of_decisions/decision_generator.py @c15eb49"
_RERANKER = f"{SEARCH} exps/bag_of_decisions/decision_reranker.py @{CURRENT[:7]}"
_BAG = f"{SEARCH} {ARMS['bag'].config} @{CURRENT[:7]}"

DEPARTURES: dict[str, tuple[Departure, ...]] = {
    "utility": (
        Departure("An empty gold answer matches no output here; the paper's `has_answer` "
                  "matches it in every output, so such a query is unknown here with every RAG "
                  "answer wrong, where the paper counts it known and every answer right.",
                  f"{UTILITY} evaluation/has_answer.py @{UTILITY_COMMIT}"),
        Departure("The hf backend cannot load float16: the calls the paper's scripts run in "
                  "float16 (one-passage answers, the verbalized and listwise judges) run in "
                  "hf's default there (float32 on the CPU, bfloat16 on a GPU); vllm runs each "
                  "call kind in its script's dtype.",
                  f"{UTILITY} src/pointwise_performance_answerem.py:39 @{UTILITY_COMMIT}"),
        Departure("Prompt version 1 artifacts show passages as stored, not stripped as "
                  "`format_passage` does (79 of nq-sample's 4,349 passages differ by edge "
                  "white space); version 2 strips.",
                  f"{UTILITY} src/dataset.py format_passage @{UTILITY_COMMIT}"),
    ),
    "seer": (
        Departure("`labeler build` scores faithfulness with the LLM's P(yes) unless "
                  "`--faithfulness alignscore` (SEER's, and `reproduce seer-paper`'s default).",
                  f"{SEER} §3.2 (AlignScore)"),
        Departure("The extraction and answer prompts are ours: SEER publishes neither.",
                  f"{SEER} Appendix A"),
        Departure("SEER states neither DPO's β (ours: TRL's 0.1), its LoRA rank and targets "
                  "(ours: rank 8, α 16, every linear layer), the τ it kept (ours: 1.0), nor "
                  "the caps on extractions and answers (ours: 256 new tokens); the full-length "
                  "answer is the generator's, not GPT-3.5-turbo's.",
                  f"{SEER} Implementation Details, Appendix A"),
        Departure("Retrieval is `--encoder`'s top 5 (BGE-M3; MiniLM offline) over wiki-dpr, "
                  "not the adversarially trained DPR: its checkpoint "
                  "(checkpoint.retriever.single-adv-hn.nq.bert-base-encoder) is a separate "
                  "question and passage encoder outside the Hub, which the one-encoder dense "
                  "retriever does not run.",
                  f"{SEER} Implementation Details (\"adversarial Dense Passage Retriever\"); "
                  f"{DPR_DOWNLOADS}"),
        Departure("`reproduce seer-paper` answers with one generator, the `--llm` (SEER: "
                  "Llama2-7B-Chat and Flan-T5-XL; both published columns are shown), and its "
                  "reference build samples and scores one extraction a query, which Table 1 "
                  "does not need.", f"{SEER} Table 1"),
    ),
    "rubric": (
        Departure("P(yes) is an open LLM's next-token probability (casing and leading-space "
                  "variants summed), asked as a chat of the rendered state then the question; "
                  "the experiment asks the hosted decision model jev/jev-latest "
                  "(`self.client.system_one(state=state, questions=questions)`), whose "
                  "rendering of a state, a question and its criteria is not public.",
                  f"{_RERANKER} DecisionReranker._probability_sum"),
        Departure("Questions are written by the `--llm`, sampled at temperature 0.7, top-p "
                  "0.95, seed 0, at most 256 new tokens; the experiment's generator is gpt-5 "
                  "at the API's default temperature (its config sets none).",
                  f"{_BAG} (`model: gpt-5`); {SEARCH} exps/bag_of_decisions/strategy.py "
                  "@8306f4f (`temperature=generator_config.get(\"temperature\")`)"),
        Departure("At most 10 questions are kept a query; the experiment keeps every one "
                  "(`return list(normalized)`).", f"{_GEN} DecisionGenerator.generate"),
        Departure("Near-duplicate questions (all-MiniLM-L6-v2 cosine ≥ 0.9) are dropped; the "
                  "experiment drops exact repeats only (`decision.strip() not in seen`).",
                  f"{_GEN} DecisionGenerator.generate"),
        Departure("A query whose output yields no question is asked again once (seed 1); the "
                  "experiment asks once and leaves such a query in BM25 order "
                  "(`if decisions:`).", f"{_RERANKER} DecisionReranker.rerank"),
        Departure("The direct arm is the config's at 8734fde; before it, the config asked "
                  "\"Is this document relevant to the search query: {query}?\" (the blog's "
                  "Jev rerank question) on the bag's state with confidence_threshold 0.7, "
                  "which no arm here runs.",
                  f"{SEARCH} configs/ecom_decisions/bag_of_decisions_direct.yml @9ec1376 and "
                  "@f465397"),
        Departure("Neither the seed nor the configs state the number of sampled queries: 100 "
                  "is ours (`--queries`); K = 100 and w = 10 are the configs' `k` and "
                  "`decision_weight`.", f"{_BAG} (`k: 100`, `decision_weight: 10`)"),
        Departure("BM25 is bm25s's Lucene BM25 over the experiment's analyser and boosts, not "
                  "SearchArray's: scores agree to float32 rounding on the tests' rows, equal "
                  "scores may order otherwise, and zero-score products read back from a run "
                  "file are ordered by product id (trec_eval's tie order).",
                  f"{SEARCH} {BM25_STRATEGY[0]} @{BM25_STRATEGY[1][:7]} "
                  "(`SearchArray.index`, `bm25_similarity`)"),
        Departure("ESCI keys a product by locale and id; the experiment by id alone, so an id "
                  "in two locales is two products here.",
                  "softwaredoug/cheat-at-search cheat_at_search/esci_data.py @1cd4203 "
                  "(`products['doc_id'] = products['product_id']`)"),
        Departure("`labeler build --artifact rubric` reports trec_eval's NDCG@10; the "
                  "experiment's metric is in `reproduce rubric-experiment`'s report beside it.",
                  "softwaredoug/cheat-at-search cheat_at_search/search.py @2edd38a "
                  "(`ndcgs = dcgs / idcg` in `run_strategy`)"),
    ),
}
