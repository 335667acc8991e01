"""LLM-specific gold utilitarian passages (Zhang et al., "LLM-Specific Utility for RAG").

Passage d is gold utilitarian for LLM L on query q iff L answers q correctly given d alone and
incorrectly with no passage:  u(q, d) = 1[has_answer(L(q, d)) > has_answer(L(q, ∅))].
Answers are greedy and chat-templated with the paper's two prompts; correctness is DPR-style
`has_answer` against the gold answers.

`label` asks the backend in one batched `generate` per kind of prompt (closed-book, one passage,
all passages, the utilitarian passages, the human gold passages) and returns the records of
schemas/utility.schema.json with the statistics of the paper's Table 3 (see `statistics`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from labeler.errors import InputError
from labeler.llm.base import Backend, Chat, LoglikelihoodRequest, Sampling, chat
from labeler.metrics import has_answer
from labeler.progress import info
from labeler.retrieval import Candidate
from labeler.sources import Passage, Query

#: The paper's closed-book prompt, L(q, ∅).
CLOSED_BOOK = (
    "Answer the following question based on your internal knowledge with one or few words "
    "without the explanation. Question: {question}\n\n Answer:"
)
#: The paper's prompt with evidence, L(q, d); the double space before "with" is the paper's.
WITH_PASSAGE = (
    "Information: \n{passage}\n Answer the following question based on the given information "
    "or your internal knowledge  with one or few words without the source.\n"
    " Question: {question}\n\n Answer:"
)
PROMPT_TEMPLATES = {"closed_book": CLOSED_BOOK, "with_passage": WITH_PASSAGE}
#: Greedy decoding; answers are "one or few words", so 32 new tokens is ample.
SAMPLING = Sampling(temperature=0.0, max_tokens=32)


@dataclass
class Labels:
    """What `label` returns: one record per query and the build's statistics."""

    records: list[dict]
    stats: dict


def closed_book_prompt(question: str) -> Chat:
    """L(q, ∅): the question alone."""
    return chat(CLOSED_BOOK.format(question=question))


def passage_prompt(question: str, passages: Sequence[Passage]) -> Chat:
    """L(q, D): the passages as "{title} {text}", one per line, in the Information block."""
    information = "\n".join(p.contents for p in passages)
    return chat(WITH_PASSAGE.format(passage=information, question=question))


def label(
    backend: Backend,
    queries: Sequence[Query],
    pools: dict[str, list[Candidate]],
    *,
    llm: str,
    pool: str,
    with_likelihood: bool = False,
) -> Labels:
    """Label every candidate of every query's pool for `backend`; statistics included.

    `llm` and `pool` are recorded in each record. With `with_likelihood`, each candidate also
    gets log P(first gold answer | q, d) (the assistant reply to the with-passage prompt).
    """
    for q in queries:
        if not q.answers:
            raise InputError(f"query {q.qid!r} has no gold answer to check outputs against",
                             field_name="answers")
    ask = _Asker(backend)
    closed = ask([closed_book_prompt(q.question) for q in queries], "closed-book answers")
    pairs = [(q, c) for q in queries for c in pools.get(q.qid, [])]
    answers = ask([passage_prompt(q.question, [c.passage]) for q, c in pairs], "one-passage answers")
    likelihoods = _likelihoods(backend, pairs) if with_likelihood else None

    records = []
    start = 0
    for q, closed_answer in zip(queries, closed):
        candidates = pools.get(q.qid, [])
        span = range(start, start + len(candidates))
        start += len(candidates)
        records.append(
            _record(q, closed_answer, candidates, [answers[i] for i in span],
                    None if likelihoods is None else [likelihoods[i] for i in span],
                    llm=llm, pool=pool)
        )

    rag = _rag_correct(ask, queries, pools, records)
    return Labels(records, statistics(records, pools, rag))


def statistics(
    records: Sequence[dict], pools: dict[str, list[Candidate]], rag: dict[str, list[bool]]
) -> dict:
    """The paper's Table 3 rows for one build, computed from the labelled records.

    - `queries`: number of records; `candidates`: candidate passages labelled in all.
    - `known_share`: share of queries whose closed-book answer is correct (known = true).
    - `mean_utilitarian`: mean over all queries of |utility_pids| (known queries count 0).
    - `utilitarian_query_share`: share of queries with at least one utilitarian passage.
    - `human_gold_in_pool`: candidates that are human gold passages (`Candidate.gold`: same pid
      or same text as one, retrieved or added by the pool);
      `human_gold_utilitarian_share`: the share of those with utility = 1 (None if there are
      none: a pool without the human gold, e.g. `rp` missing them, or a dataset without them).
    - `accuracy_no_passage`: RAG accuracy with no passage = share of correct closed-book answers.
    - `accuracy_all`: accuracy with all of a query's candidates in one Information block (rank
      order); a query with an empty pool is answered with no passage.
    - `accuracy_utilitarian`: accuracy with only the query's gold utilitarian passages together;
      a query with none (every known query, and unknown queries no passage helps) is answered
      with no passage, i.e. its closed-book answer counts.
    - `accuracy_human_gold`: accuracy with only the query's human gold passages together, over
      the `human_gold_queries` queries that have any (None if no query has them).

    `rag` holds per-query correctness of the three evidence settings, keyed "all",
    "utilitarian" and "human_gold" (the last over the queries with human gold only).
    """
    n = len(records)
    gold_labels = [
        row["utility"]
        for r in records
        for row, candidate in zip(r["candidates"], pools.get(r["qid"], []))
        if candidate.gold
    ]
    return {
        "queries": n,
        "candidates": sum(len(r["candidates"]) for r in records),
        "known_share": _mean(r["known"] for r in records),
        "mean_utilitarian": _mean(len(r["utility_pids"]) for r in records),
        "utilitarian_query_share": _mean(bool(r["utility_pids"]) for r in records),
        "human_gold_in_pool": len(gold_labels),
        "human_gold_utilitarian_share": _mean(gold_labels),
        "accuracy_no_passage": _mean(r["known"] for r in records),
        "accuracy_all": _mean(rag["all"]),
        "accuracy_utilitarian": _mean(rag["utilitarian"]),
        "human_gold_queries": len(rag["human_gold"]),
        "accuracy_human_gold": _mean(rag["human_gold"]),
    }


class _Asker:
    """Batched greedy answers; a prompt already asked in this build is not sent again."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.seen: dict[Chat, str] = {}

    def __call__(self, prompts: list[Chat], what: str) -> list[str]:
        new = list(dict.fromkeys(p for p in prompts if p not in self.seen))
        if new:
            info(f"{what}: {len(new)} prompts")
            outputs = self.backend.generate(new, SAMPLING)
            self.seen.update((p, out[0].strip()) for p, out in zip(new, outputs))
        return [self.seen[p] for p in prompts]


def _likelihoods(backend: Backend, pairs: list[tuple[Query, Candidate]]) -> list[float]:
    """log P(first gold answer | q, d) per pair, in one batched call."""
    info(f"answer likelihoods: {len(pairs)} requests")
    return backend.loglikelihood(
        [LoglikelihoodRequest(passage_prompt(q.question, [c.passage]), q.answers[0])
         for q, c in pairs]
    )


def _record(q: Query, closed_answer: str, candidates: list[Candidate], answers: list[str],
            likelihoods: list[float] | None, *, llm: str, pool: str) -> dict:
    known = has_answer(closed_answer, q.answers)
    rows = []
    for i, (c, answer) in enumerate(zip(candidates, answers)):
        correct = has_answer(answer, q.answers)
        row = {
            "pid": c.passage.pid,
            "title": c.passage.title,
            "text": c.passage.text,
            "source": c.source,
            "rank": c.rank,
            "answer": answer,
            "correct": correct,
            "utility": int(correct and not known),
        }
        if likelihoods is not None:
            row["loglikelihood"] = likelihoods[i]
        rows.append(row)
    return {
        "qid": q.qid,
        "question": q.question,
        "answers": list(q.answers),
        "llm": llm,
        "pool": pool,
        "known": known,
        "closed_book_answer": closed_answer,
        "candidates": rows,
        "utility_pids": [r["pid"] for r in rows if r["utility"]],
    }


def _rag_correct(ask: _Asker, queries: Sequence[Query], pools: dict[str, list[Candidate]],
                 records: list[dict]) -> dict[str, list[bool]]:
    """Per-query correctness with all candidates, the utilitarian ones, the human gold ones."""
    def evidence_prompt(q: Query, passages: list[Passage]) -> Chat:
        return passage_prompt(q.question, passages) if passages else closed_book_prompt(q.question)

    all_prompts, util_prompts = [], []
    for q, r in zip(queries, records):
        passages = [c.passage for c in pools.get(q.qid, [])]
        useful = set(r["utility_pids"])
        all_prompts.append(evidence_prompt(q, passages))
        util_prompts.append(evidence_prompt(q, [p for p in passages if p.pid in useful]))
    gold = [q for q in queries if q.gold]
    gold_prompts = [passage_prompt(q.question, q.gold) for q in gold]
    return {
        "all": _correct(ask(all_prompts, "all-passage answers"), queries),
        "utilitarian": _correct(ask(util_prompts, "utilitarian-passage answers"), queries),
        "human_gold": _correct(ask(gold_prompts, "human-gold answers"), gold),
    }


def _correct(outputs: list[str], queries: Iterable[Query]) -> list[bool]:
    return [has_answer(out, q.answers) for out, q in zip(outputs, queries)]


def _mean(values: Iterable[float | bool | int]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None
