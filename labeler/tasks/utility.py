"""LLM-specific gold utilitarian passages (Zhang et al., "LLM-Specific Utility for RAG").

Passage d is gold utilitarian for LLM L on query q iff L answers q correctly given d alone and
incorrectly with no passage:  u(q, d) = 1[has_answer(L(q, d)) > has_answer(L(q, ∅))].
Answers are greedy and chat-templated with the paper's two prompts (for a claim dataset,
`Source.kind == "claim"`, its two claim-verification prompts), each up to `max_new_tokens` new
tokens; correctness is DPR-style `has_answer` against the gold answers (for claims, the verdict
SUPPORTS / REFUTES). Each record also keeps L's answers with all candidates, with the
utilitarian ones only and with the human gold ones only (the paper's Table 3), and for every
answer whether it stopped at the cap: a cut answer can only turn right into wrong, so the build
counts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import ClassVar

from labeler.errors import InputError
from labeler.llm.base import Chat, Completion, LoglikelihoodRequest, Sampling, chat
from labeler.llm.calls import Calls
from labeler.metrics.answers import has_answer
from labeler.retrieval import Candidate
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source
from labeler.tasks.base import LLM, PlannedCall, Shard, Task, TaskConfig, digest
from labeler.tasks.utility_record import record_of, with_flags
from labeler.tasks.utility_setting import PROMPT_VERSION, departures

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
#: How the with-passage prompts show a passage, by the manifest's `prompt_version` (an
#: artifact without one is version 1): 1, "{title} {text}" as stored; 2, each stripped, as the
#: paper's `format_passage` shows it (they differ where a title or text has edge white space).
PASSAGE_FORMATS = {1: lambda passage: passage.contents, 2: lambda passage: passage.stripped}
#: The paper's claim-verification pair for FEVER (its src/fever/dataset.py), verbatim:
#: "repsonse", the double space and the missing space before "Verify" are the paper's.
CLAIM_CLOSED_BOOK = (
    "Verify the following claim based on your internal knowledge with one or few words "
    "without the explanation. Claim: {question}\n\n The final repsonse is REFUTES, SUPPORTS. "
    "Verification:"
)
CLAIM_WITH_PASSAGE = (
    "Information: \n{passage}\nVerify the following claim based on the given information or "
    "your internal knowledge  with one or few words without the source.\n Claim: {question}"
    "\n\n The final repsonse is REFUTES, SUPPORTS. Verification:"
)
#: `Source.kind` -> its prompt pair; a claim's answers are its verdicts, matched by has_answer
#: as the paper's evaluation/fever_acc.py does
TEMPLATES_BY_KIND = {
    "question": PROMPT_TEMPLATES,
    "claim": {"closed_book": CLAIM_CLOSED_BOOK, "with_passage": CLAIM_WITH_PASSAGE},
}
#: The default cap on an answer's new tokens: one that a sentence-long answer never reaches
#: (the prompts ask for "one or few words"), since a cut answer can only lose its gold answer.
MAX_NEW_TOKENS = 256
#: Greedy decoding, up to `UtilityConfig.max_new_tokens` new tokens.
ANSWER = Sampling(temperature=0.0, max_tokens=MAX_NEW_TOKENS)


@dataclass(frozen=True)
class UtilityConfig(TaskConfig):
    """The utility task's config."""

    with_likelihood: bool = field(default=False, metadata={
        "help": "also record log P(gold answer | q, d) per candidate"})
    max_new_tokens: int = field(default=MAX_NEW_TOKENS, metadata={
        "help": "cap on each answer's new tokens (the paper's code: 4096); answers that reach "
                "it are counted in the manifest and card", "min": 1})


def closed_book_prompt(question: str, kind: str = "question") -> Chat:
    """L(q, ∅): the question (or claim) alone."""
    return chat(TEMPLATES_BY_KIND[kind]["closed_book"].format(question=question))


def passage_prompt(question: str, passages: Sequence[Passage], kind: str = "question", *,
                   version: int = PROMPT_VERSION) -> Chat:
    """L(q, D): the passages as prompt `version` shows them (`PASSAGE_FORMATS`), one per
    line, in the Information block."""
    information = "\n".join(map(PASSAGE_FORMATS[version], passages))
    return chat(TEMPLATES_BY_KIND[kind]["with_passage"].format(passage=information,
                                                               question=question))


def evidence_prompt(question: str, passages: Sequence[Passage], kind: str = "question", *,
                    version: int = PROMPT_VERSION) -> Chat:
    """L(q, D) as the `rag` answers ask it: with the passages, or closed-book when there are
    none (a query without candidates, or without utilitarian ones)."""
    return (passage_prompt(question, passages, kind, version=version) if passages
            else closed_book_prompt(question, kind))


class UtilityTask(Task):
    """Label every candidate of every query's pool as gold utilitarian for one LLM, or not."""

    name = "utility"
    summary = ("utility (the default): a passage is gold utilitarian for an LLM on a query iff "
               "the LLM answers correctly given that passage alone and wrongly with no passage "
               "(Zhang et al., LLM-specific utility).")
    Config = UtilityConfig
    prompts = PROMPT_TEMPLATES
    rows = (
        ("queries", "queries", "count"),
        ("candidates", "candidate passages labelled", "count"),
        ("capped_answers", "answers cut at the new-token cap", "count"),
        ("capped_closed_book", "closed-book answers cut at the cap", "count"),
        ("known_share", "known (closed-book correct)", "share"),
        ("mean_utilitarian", "gold utilitarian passages / query", "mean"),
        ("utilitarian_query_share", "queries with a utilitarian passage", "share"),
        ("human_gold_in_pool", "human gold passages in the pools", "count"),
        ("human_gold_utilitarian_share", "human gold passages that are utilitarian", "share"),
        ("accuracy_no_passage", "RAG accuracy: no passage", "share"),
        ("accuracy_all", "RAG accuracy: all candidates together", "share"),
        ("accuracy_utilitarian", "RAG accuracy: gold utilitarian only", "share"),
        ("accuracy_human_gold", "RAG accuracy: human gold only", "share"),
    )
    metadata: ClassVar[dict] = {
        "pretty_name": "LLM-specific gold utilitarian passages",
        "task_categories": ["question-answering", "text-retrieval"],
        "tags": ["rag", "retrieval-augmented-generation", "passage-utility",
                 "llm-specific-utility", "labeler"],
    }
    rank_nonempty_gold = True  # "we only consider queries with non-empty gold utilitarian labels"
    answers_from = True
    own_answer_prompts = True

    def templates(self, kind: str = "question") -> dict[str, str]:
        """The QA pair for questions, the claim-verification pair for claims (FEVER)."""
        if kind not in TEMPLATES_BY_KIND:
            return super().templates(kind)
        return dict(TEMPLATES_BY_KIND[kind])

    def manifest(self, kind: str = "question") -> dict:
        """The base's, and the `prompt_version` its passages are shown by."""
        return super().manifest(kind) | {"prompt_version": PROMPT_VERSION}

    @property
    def decoding(self) -> dict[str, Sampling]:
        """Greedy answers, capped at the config's max_new_tokens."""
        return {"answer": replace(ANSWER, max_tokens=self.config.max_new_tokens)}

    def check(self, source: Source) -> None:
        for q in source.queries:
            if not q.answers:
                raise InputError(f"query {q.qid!r} has no gold answer to check outputs against",
                                 field_name="answers")

    def scoring(self) -> tuple[str, ...]:
        return ("loglikelihood",) if self.config.with_likelihood else ()

    def planned_calls(self, source: Source, candidates: int, gold: Sequence[int]
                      ) -> list[PlannedCall]:
        """Closed-book, one-passage (and likelihood), all-passage, utilitarian and human-gold
        answers."""
        queries = len(source.queries)
        per_query = candidates / max(queries, 1)
        bound = "exact" if self.config.pool == "hgp" else "upper bound"
        calls = [PlannedCall("closed-book answers", queries, 0, "exact"),
                 PlannedCall("one-passage answers", candidates, 1, bound)]
        if self.config.with_likelihood:
            calls.append(PlannedCall("answer likelihoods", candidates, 1, bound))
        return [*calls, PlannedCall("all-passage answers", queries, per_query, bound),
                PlannedCall("utilitarian-passage answers", queries, per_query, "upper bound"),
                PlannedCall("human-gold answers", sum(map(bool, gold)),
                            sum(gold) / max(queries, 1), "exact")]

    def planned_requests(self, source: Source, pools: Mapping[str, list[Candidate]]
                         ) -> tuple[int, str]:
        """The distinct answers `label` asks (a human-gold prompt may be a one-passage or the
        all-passage one) and likelihoods. A utilitarian prompt is the closed-book (no
        utilitarian passage), a one-passage (one) or the all-passage prompt (all) unless
        2 <= |U| < |pool|: at most one more for a query of three or more candidates."""
        kind, answers, likelihoods, more = source.kind, set(), set(), 0
        for q in source.queries:
            pool = [c.passage for c in pools.get(q.qid, [])]
            answers.update(map(digest, [
                closed_book_prompt(q.question, kind), evidence_prompt(q.question, pool, kind),
                *(passage_prompt(q.question, [p], kind) for p in pool),
                *([passage_prompt(q.question, q.gold, kind)] if q.gold else [])]))
            if self.config.with_likelihood:
                likelihoods.update(digest((passage_prompt(q.question, [p], kind), q.answers[0]))
                                   for p in pool)
            more += len(pool) >= 3
        return len(answers) + len(likelihoods) + more, ("exact" if not more else
                              f"upper bound: {more:,} utilitarian-passage answers may repeat "
                              "another prompt")

    def label(self, calls: Mapping[str, Calls], shard: Shard) -> list[dict]:
        """Closed-book, one-passage, all-passage, utilitarian and human-gold answers; all but
        the utilitarian ones (which need the others) in one batched call; with
        `with_likelihood`, log P(first gold answer | q, d) too."""
        llm, queries, pools, kind = calls[LLM], shard.queries, shard.pools, shard.kind
        qids = [q.qid for q in queries]
        pairs = [(q, c) for q in queries for c in pools[q.qid]]
        named = [f"{q.qid}, passage {c.passage.pid}" for q, c in pairs]
        gold = [q for q in queries if q.gold]
        answer = self.decoding["answer"]
        closed, one, every, human = _answer_all(llm, answer, [
            ("closed-book answers", [closed_book_prompt(q.question, kind) for q in queries],
             qids),
            ("one-passage answers",
             [passage_prompt(q.question, [c.passage], kind) for q, c in pairs], named),
            ("all-passage answers", [evidence_prompt(q.question, [c.passage for c in pools[
                q.qid]], kind) for q in queries], qids),
            ("human-gold answers", [passage_prompt(q.question, q.gold, kind) for q in gold],
             [q.qid for q in gold]),
        ])
        likelihoods = None
        if self.config.with_likelihood:
            likelihoods = llm.loglikelihood(
                [LoglikelihoodRequest(passage_prompt(q.question, [c.passage], kind), q.answers[0])
                 for q, c in pairs], "answer likelihoods", named)
        records, start = [], 0
        for q, closed_answer in zip(queries, closed):
            span = slice(start, start + len(pools[q.qid]))
            start = span.stop
            records.append(record_of(q, closed_answer, pools[q.qid], one[span],
                                   None if likelihoods is None else likelihoods[span],
                                   llm=llm.alias, pool=self.config.pool))
        _add_rag(llm, answer, queries, pools, records, kind, {
            "all": dict(zip(qids, every)),
            "human_gold": dict(zip((q.qid for q in gold), human))})
        return records

    @staticmethod
    def statistics(records: Iterable[dict]) -> dict:
        """The paper's Table 3 rows, from the records alone.

        - `queries`, `candidates`: records, and candidates labelled in all.
        - `answers`: the LLM's answers in the records (closed-book, one per candidate, and the
          `rag` ones); `capped_answers`: those that stopped at the new-token cap;
          `capped_closed_book`: the closed-book ones among them (each may make a known query
          look unknown, and give its passages false utility).
        - `known_share` = `accuracy_no_passage`: share of queries answered right closed-book.
        - `mean_utilitarian`: mean |utility_pids| over all queries (known ones count 0);
          `utilitarian_query_share`: share of queries with at least one.
        - `human_gold_in_pool`: candidates that are human gold (`gold`);
          `human_gold_utilitarian_share`: the share of those with utility 1 (None if none).
        - `accuracy_all`, `accuracy_utilitarian`: share of `rag.all.correct`,
          `rag.utilitarian.correct` (a query without candidates, or without utilitarian ones,
          was asked closed-book).
        - `accuracy_human_gold`: share of `rag.human_gold.correct` over the
          `human_gold_queries` records that have it (None if none).
        """
        import polars as pl  # here, not at import: `labeler score` reads records without it

        frame = pl.DataFrame(
            [_stat_row(r) for r in records],
            schema={"known": pl.Boolean, "candidates": pl.Int64, "utilitarian": pl.Int64,
                    "gold": pl.Int64, "gold_utilitarian": pl.Int64, "all": pl.Boolean,
                    "useful": pl.Boolean, "human_gold": pl.Boolean, "answers": pl.Int64,
                    "capped": pl.Int64, "closed_capped": pl.Boolean},
            orient="row",
        )
        row = frame.select(
            queries=pl.len(),
            candidates=pl.col("candidates").sum(),
            answers=pl.col("answers").sum(),
            capped_answers=pl.col("capped").sum(),
            capped_closed_book=pl.col("closed_capped").sum(),
            known_share=pl.col("known").mean(),
            mean_utilitarian=pl.col("utilitarian").mean(),
            utilitarian_query_share=(pl.col("utilitarian") > 0).mean(),
            human_gold_in_pool=pl.col("gold").sum(),
            human_gold_utilitarian_share=pl.col("gold_utilitarian").sum()
            / pl.col("gold").sum().replace(0, None),
            accuracy_no_passage=pl.col("known").mean(),
            accuracy_all=pl.col("all").mean(),
            accuracy_utilitarian=pl.col("useful").mean(),
            human_gold_queries=pl.col("human_gold").count(),
            accuracy_human_gold=pl.col("human_gold").mean(),
        ).row(0, named=True)
        return {k: (float(v) if isinstance(v, float) else v) for k, v in row.items()}

    @classmethod
    def card_context(cls, manifest: dict) -> dict:
        """`departures`: where this build departs from the paper's setting (the card's
        "Setting" section)."""
        return {"departures": departures(manifest)}

    @classmethod
    def rederive(cls, manifest: dict, tables: Mapping[str, list[dict]]) -> dict[str, list[dict]]:
        """Every flag derived again from the record's own answers (`with_flags`)."""
        return {"data": [with_flags(record) for record in tables["data"]]}

    @staticmethod
    def reference(record: dict) -> tuple[dict[str, int], list[str]]:
        """Each candidate's `utility` is its label; `utility_pids` is the gold set."""
        labels = {c["pid"]: c["utility"] for c in record["candidates"]}
        labels.update(dict.fromkeys(record["utility_pids"], 1))
        return labels, record["utility_pids"]


def _answers(llm: Calls, sampling: Sampling, prompts: list[Chat], names: list[str],
             what: str) -> list[Completion]:
    return [Completion(out[0].text.strip(), out[0].capped)
            for out in llm.generate(prompts, sampling, what, names)]


def _answer_all(llm: Calls, sampling: Sampling,
                parts: list[tuple[str, list[Chat], list[str]]]) -> list[list[Completion]]:
    """Each part's (call kind, prompts, names) answers, the parts asked of one backend in one
    generate call (a kind may be routed to the model in another dtype: `Calls.of`): the
    backend's running batch then refills from one queue, so a long answer decodes beside the
    rest, not alone at the end of its own call."""
    groups: dict[int, list[int]] = {}
    for i, (kind, _, _) in enumerate(parts):
        groups.setdefault(id(llm.of(kind)), []).append(i)
    answers: list[list[Completion]] = [[] for _ in parts]
    for members in groups.values():
        chosen = [parts[i] for i in members]
        flat = _answers(llm.of(chosen[0][0]), sampling,
                        [p for _, prompts, _ in chosen for p in prompts],
                        [n for _, _, names in chosen for n in names],
                        " + ".join(kind for kind, _, _ in chosen))
        ends = accumulate(len(prompts) for _, prompts, _ in chosen)
        for i, (_, prompts, _), end in zip(members, chosen, ends):
            answers[i] = flat[end - len(prompts):end]
    return answers


def _add_rag(llm: Calls, sampling: Sampling, queries: Sequence[Query],
             pools: dict[str, list[Candidate]], records: list[dict], kind: str,
             asked: dict[str, dict[str, Completion]]) -> None:
    """`rag` of each record: the answer and its correctness with all candidates, with the
    utilitarian ones, and with the human gold ones (null for a query without); `asked` holds
    the all-passage and human-gold answers by qid, asked beside the closed-book ones."""
    util_prompts = []
    for q, r in zip(queries, records):
        useful = set(r["utility_pids"])
        util_prompts.append(evidence_prompt(
            q.question, [c.passage for c in pools[q.qid] if c.passage.pid in useful], kind))
    qids = [q.qid for q in queries]
    useful = _answers(llm, sampling, util_prompts, qids, "utilitarian-passage answers")
    answers = {"all": asked["all"], "utilitarian": dict(zip(qids, useful)),
               "human_gold": asked["human_gold"]}
    for q, r in zip(queries, records):
        r["rag"] = {
            setting: {"answer": by_qid[q.qid].text, "capped": by_qid[q.qid].capped,
                      "correct": has_answer(by_qid[q.qid].text, q.answers)}
            if q.qid in by_qid else None
            for setting, by_qid in answers.items()
        }


def _stat_row(record: dict) -> tuple:
    gold = [c["utility"] for c in record["candidates"] if c["gold"]]
    rag = record["rag"]
    capped = [record["closed_book_capped"], *(c["capped"] for c in record["candidates"]),
              *(a["capped"] for a in rag.values() if a is not None)]
    return (record["known"], len(record["candidates"]), len(record["utility_pids"]), len(gold),
            sum(gold), rag["all"]["correct"], rag["utilitarian"]["correct"],
            None if rag["human_gold"] is None else rag["human_gold"]["correct"], len(capped),
            sum(capped), record["closed_book_capped"])
