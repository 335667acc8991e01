"""Bag-of-decisions reranking: a query becomes a bag of yes/no questions instead of a bag of
words, and a document's score is the sum of P(yes) over the questions.

The LLM writes the questions with the original experiment's prompts; `parse_questions` reads
numbered, bulleted, JSON and prose lists; blanks, exact and near duplicates (embedding cosine
>= 0.9, the bundled MiniLM) go, at most `max_questions` stay. A query whose output yields no
question is asked again once with a new seed, then recorded as empty. For each of the BM25
top `rerank_k` documents and each question, a chat with the document first, then the question,
gives P(yes) = p(yes) / (p(yes) + p(no)), each summed over casing and leading-space variants
(the document-first order lets the hf backend prefill each document once for all its questions):

    rubric(q, d) = Σ_i P(yes | d, question_i)        fused(q, d) = BM25(q, d) + w · rubric(q, d)

on the top K, the rest keeping BM25 order (fused = BM25 there, below every reranked one). The
single-question baseline is P(yes) of "Is this document relevant to this query?" alone.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from labeler.errors import InputError
from labeler.formats import Run
from labeler.llm.base import Chat, ChoiceRequest, Message, Sampling, chat, yes_probability
from labeler.llm.calls import Calls
from labeler.metrics.ranking import rank_metrics
from labeler.metrics.significance import paired_t_test
from labeler.sources.types import Source
from labeler.tasks.base import LLM, Shard, Task, TaskConfig

#: The original experiment's question-generation prompts, verbatim.
GENERATE_SYSTEM = (
    "You are a search relevance decision engine. You will be given a query, and your job is to "
    "generate a list of yes/no questions that can be used to determine if a document is "
    "relevant to the query."
)
GENERATE_USER = (
    "For the given query, please generate a list of yes/no questions where the affirmative\n"
    "indicates the document is relevant to the query.\n\nHere's the query:\n\n{query}"
)
#: The P(yes) chat (ours: the experiment fixes its order, document first, not its words).
JUDGE_SYSTEM = "You are a search relevance decision engine. Answer each question about the " \
    "document with yes or no."
JUDGE_DOCUMENT = "Here's the document:\n\n{document}"
JUDGE_QUESTION = "{question}\n\nAnswer yes or no."
#: The experiment's single-question baseline, with the query it asks about.
SINGLE_QUESTION = "Here's the query:\n\n{query}\n\nIs this document relevant to this query?"
PROMPT_TEMPLATES = {"generate_system": GENERATE_SYSTEM, "generate_user": GENERATE_USER,
                    "judge_system": JUDGE_SYSTEM, "judge_document": JUDGE_DOCUMENT,
                    "judge_question": JUDGE_QUESTION, "single_question": SINGLE_QUESTION}
#: each answer word's casing and leading-space variants, whose probabilities are summed
YES, NO = ("yes", "Yes", " yes", " Yes"), ("no", "No", " no", " No")
#: sampled question lists, so that a retry with the next seed can differ
GENERATE = Sampling(temperature=0.7, top_p=0.95, max_tokens=256, seed=0)
#: questions whose embeddings are at least this close are near duplicates
NEAR_DUPLICATE = 0.9
#: the cut-off of the reported NDCG
NDCG_K = 10
#: the fused ranking, written beside the tables as a TREC run
RUN_FILE = "fused.trec"
METHODS = ("bm25", "single", "rubric", "fused")


@dataclass(frozen=True)
class RubricConfig(TaskConfig):
    """The rubric task's config: BM25 candidates, reranked by the LLM's yes/no questions."""

    encoder: str | None = "bm25"  # the first stage; fused adds to its scores
    max_questions: int = field(default=10, metadata={
        "help": "questions kept per query", "min": 1})
    weight: float = field(default=10.0, metadata={"help": "w in fused = BM25 + w · rubric"})
    rerank_k: int = field(default=100, metadata={
        "help": "the BM25 top K the LLM scores", "min": 1})
    single_question: bool = field(default=False, metadata={
        "help": "also score the single-question baseline (\"Is this document relevant to this "
                "query?\")"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.run is None and self.encoder != "bm25":
            raise InputError(f"the rubric fuses with BM25 scores, not {self.encoder}'s",
                             field_name="encoder", hint="leave --encoder unset (bm25) or pass "
                                                        "a BM25 run with --run")


def generation_prompt(query: str) -> Chat:
    """The experiment's question-generation chat for `query`."""
    return chat(GENERATE_USER.format(query=query), system=GENERATE_SYSTEM)


def judge_prompt(document: str, question: str) -> Chat:
    """The document first, then the question: all questions of a document share its prefix."""
    return (Message("system", JUDGE_SYSTEM),
            Message("user", JUDGE_DOCUMENT.format(document=document)),
            Message("user", JUDGE_QUESTION.format(question=question)))


def p_yes(probs: dict[str, float]) -> float:
    """P(yes) from one `choice_probs` answer over YES + NO, each word's variants summed."""
    return yes_probability({"yes": sum(probs[c] for c in YES), "no": sum(probs[c] for c in NO)},
                           "yes", "no")


def parse_questions(text: str) -> list[str]:
    """The questions of an LLM's list: JSON (a list, or an object holding one), numbered or
    bulleted lines, else the sentences ending in "?"; markdown and labels stripped, blanks and
    exact repeats (ignoring case and spacing) dropped.

    >>> parse_questions('1. Does it cover X?\\n2. **Scope**: Is Y discussed?\\n- Does it cover X?')
    ['Does it cover X?', 'Is Y discussed?']
    """
    found = _from_json(text)
    if found is None:
        items = [m.group(1) for m in map(_ITEM.match, text.splitlines()) if m]
        asked = [i for i in items if "?" in i]
        found = asked or items or _SENTENCE.findall(text)
    questions: dict[str, str] = {}
    for item in found:
        question = _clean(item)
        if question:
            questions.setdefault(" ".join(question.casefold().split()), question)
    return list(questions.values())


class RubricTask(Task):
    """Questions per query, P(yes) per (question, document), rubric and fused scores."""

    name = "rubric"
    Config = RubricConfig
    prompts = PROMPT_TEMPLATES
    decoding: ClassVar[dict[str, Sampling]] = {"generate": GENERATE}
    tables = ("candidates",)
    rows = (
        ("queries", "queries", "count"),
        ("questions", "questions kept", "count"),
        ("mean_questions", "questions / query", "mean"),
        ("retried", "queries asked again (no question)", "count"),
        ("empty", "queries left without a question", "count"),
        ("scored", "documents scored by the LLM", "count"),
        ("judged_queries", "queries with human judgments", "count"),
        *((f"ndcg@{NDCG_K}_{m}", f"NDCG@{NDCG_K} {label}", "mean") for m, label in (
            ("bm25", "BM25"), ("single", "single question"), ("rubric", "rubric alone"),
            ("fused", "fused"))),
        ("fused_vs_bm25_p", "fused vs BM25: paired t-test p", "mean"),
        ("rubric_vs_bm25_p", "rubric vs BM25: paired t-test p", "mean"),
    )
    metadata: ClassVar[dict] = {
        "pretty_name": "Bag-of-decisions rubrics: yes/no questions and P(yes) per document",
        "task_categories": ["text-retrieval", "text-ranking"],
        "tags": ["reranking", "llm-as-judge", "bag-of-decisions", "rubric", "labeler"],
    }

    def __init__(self, config: RubricConfig) -> None:
        super().__init__(config)
        self._encoder = None

    def check(self, source: Source) -> None:
        if source.corpus is None and self.config.run is None:
            raise InputError(f"dataset '{source.name}' has no documents to rank",
                             field_name="corpus", hint="pass --corpus FILE or --run FILE")

    def label(self, calls: Mapping[str, Calls], shard: Shard) -> list[dict]:
        """Questions for every query (one batched call, one more for the retries), then P(yes)
        for every (document, question) of every query in one batched call."""
        llm, queries, config = calls[LLM], shard.queries, self.config
        qids = [q.qid for q in queries]
        prompts = [generation_prompt(q.question) for q in queries]
        texts = [c[0].text for c in llm.generate(prompts, GENERATE, "rubric questions", qids)]
        parsed = [parse_questions(t) for t in texts]
        retried = [i for i, found in enumerate(parsed) if not found]
        if retried:
            again = llm.generate([prompts[i] for i in retried], replace(GENERATE, seed=1),
                                 "rubric questions, asked again", [qids[i] for i in retried])
            for i, samples in zip(retried, again):
                parsed[i] = parse_questions(samples[0].text)
        kept = self._distinct(parsed)
        asks: list[tuple[int, int, str]] = []  # (query, candidate, question text)
        for i, q in enumerate(queries):
            single = SINGLE_QUESTION.format(query=q.question) if config.single_question else None
            for j, c in enumerate(shard.pools[q.qid][:config.rerank_k]):
                asks.extend((i, j, text) for text in [*kept[i], *([single] if single else [])])
        requests = [ChoiceRequest(judge_prompt(shard.pools[queries[i].qid][j].passage.contents,
                                               text), YES + NO) for i, j, text in asks]
        names = [f"{qids[i]}, document {shard.pools[qids[i]][j].passage.pid}" for i, j, _ in asks]
        probs = iter(llm.choice_probs(requests, "P(yes)", names))
        records = []
        for i, q in enumerate(queries):
            candidates = []
            for j, c in enumerate(shard.pools[q.qid]):
                scored = j < config.rerank_k
                answers = [p_yes(next(probs)) for _ in kept[i]] if scored else []
                single = p_yes(next(probs)) if scored and config.single_question else None
                candidates.append({"pid": c.passage.pid, "bm25": c.score, "p_yes": answers,
                                   "single": single, "scored": scored})
            relevance = q.relevance or {g.pid: 1 for g in q.gold}
            records.append({"qid": q.qid, "query": q.question, "llm": llm.alias,
                            "output": texts[i], "retried": i in retried,
                            "questions": [{"id": f"{q.qid}-{n}", "text": t}
                                          for n, t in enumerate(kept[i], 1)],
                            "relevance": relevance, "candidates": candidates})
        return records

    def derive(self, records: list[dict], settled: dict) -> dict[str, list[dict]]:
        """data: one record per query with its questions and NDCG@10 per method (when it has
        judgments); candidates: one per document with its scores and fused rank."""
        rows, data = [], []
        runs: dict[str, dict[str, dict[str, float]]] = {m: {} for m in METHODS}
        for record in records:
            scored = self._scores(record)
            rows.extend(scored)
            for method in METHODS:
                runs[method][record["qid"]] = _ranked(scored, method)
        judged = [r["qid"] for r in records if any(v > 0 for v in r["relevance"].values())]
        qrels = {r["qid"]: r["relevance"] for r in records}
        ndcg = {m: dict(zip(judged, rank_metrics(runs[m], qrels, ks=[NDCG_K],
                                                 qids=judged)[f"ndcg@{NDCG_K}"].tolist()))
                for m in METHODS} if judged else {}
        for record in records:
            qid = record["qid"]
            values = {m: ndcg[m][qid] for m in METHODS} if qid in ndcg.get("bm25", {}) else None
            if values is not None and not self.config.single_question:
                values["single"] = None
            data.append({k: v for k, v in record.items() if k != "candidates"}
                        | {"scored": sum(c["scored"] for c in record["candidates"]),
                           f"ndcg@{NDCG_K}": values})
        return {"data": data, "candidates": rows}

    @staticmethod
    def attachments(read: Callable[[str], Iterator[dict]]) -> dict[str, str]:
        """The fused ranking as a TREC run (`labeler score fused.trec --against QRELS`)."""
        run = Run()
        for row in read("candidates"):
            run.setdefault(row["qid"], {})[row["pid"]] = row["fused"]
        with tempfile.TemporaryDirectory() as folder:
            return {RUN_FILE: run.save(Path(folder) / RUN_FILE, tag="labeler-rubric").read_text()}

    @staticmethod
    def statistics(records: Iterable[dict]) -> dict:
        """From the data records alone: `queries`, `questions` (kept, in all),
        `mean_questions`, `retried` (asked again for having none), `empty` (still none),
        `scored` (documents the LLM scored), `judged_queries` (with a relevant judgment),
        `ndcg@10_<method>` (mean over the judged queries; single: None unless asked) and
        `<method>_vs_bm25_p` with `<method>_vs_bm25` (the paired t-test against BM25)."""
        records = list(records)
        n = len(records)
        questions = [len(r["questions"]) for r in records]
        judged = [r[f"ndcg@{NDCG_K}"] for r in records if r[f"ndcg@{NDCG_K}"] is not None]
        stats = {"queries": n, "questions": sum(questions),
                 "mean_questions": sum(questions) / n if n else None,
                 "retried": sum(r["retried"] for r in records),
                 "empty": sum(not q for q in questions),
                 "scored": sum(r["scored"] for r in records), "judged_queries": len(judged)}
        values = {m: np.array([np.nan if v[m] is None else v[m] for v in judged], dtype=float)
                  for m in METHODS}
        for method in METHODS:
            known = values[method][~np.isnan(values[method])]
            stats[f"ndcg@{NDCG_K}_{method}"] = float(known.mean()) if known.size else None
        for method in ("single", "rubric", "fused"):
            test = paired_t_test(values[method], values["bm25"]) if judged else None
            usable = test is not None and test.n > 0
            stats[f"{method}_vs_bm25"] = test.as_dict() if usable else None
            stats[f"{method}_vs_bm25_p"] = test.p if usable and np.isfinite(test.p) else None
        return stats

    @staticmethod
    def reference(record: dict) -> tuple[dict[str, int], list[str]]:
        """The human judgments a record carries, and its relevant documents as the gold set."""
        labels = dict(record["relevance"])
        return labels, [pid for pid, label in labels.items() if label > 0]

    def _scores(self, record: dict) -> list[dict]:
        """One row per candidate: rubric = Σ P(yes), fused = BM25 + w · rubric on the top K
        (BM25 elsewhere), and the rank in the fused order (ties: BM25 order)."""
        rows = []
        for bm25_rank, c in enumerate(record["candidates"], 1):
            rubric = float(sum(c["p_yes"])) if c["scored"] else None
            fused = c["bm25"] + self.config.weight * rubric if c["scored"] else c["bm25"]
            rows.append({"qid": record["qid"], "pid": c["pid"], "bm25": c["bm25"],
                         "bm25_rank": bm25_rank, "p_yes": c["p_yes"], "rubric": rubric,
                         "single": c["single"], "fused": fused,
                         "label": record["relevance"].get(c["pid"])})
        order = sorted(rows, key=lambda r: -r["fused"])  # stable: ties keep BM25 order
        for rank, row in enumerate(order, 1):
            row["rank"] = rank
        return rows

    def _distinct(self, parsed: list[list[str]]) -> list[list[str]]:
        """Each query's questions without near duplicates (cosine >= NEAR_DUPLICATE to one
        kept before it), at most `max_questions`; all questions embedded in one batch."""
        flat = [q for questions in parsed for q in questions]
        if not flat:
            return [[] for _ in parsed]
        if self._encoder is None:
            from labeler.retrieval.dense import load_encoder

            self._encoder = load_encoder("minilm")
        vectors = iter(self._encoder.encode(flat, "question embeddings"))
        kept = []
        for questions in parsed:
            chosen: list[tuple[str, np.ndarray]] = []
            for question, vector in zip(questions, vectors):
                if len(chosen) < self.config.max_questions and all(
                        float(vector @ v) < NEAR_DUPLICATE for _, v in chosen):
                    chosen.append((question, vector))
            kept.append([q for q, _ in chosen])
        return kept


def _ranked(rows: Sequence[dict], method: str) -> dict[str, float]:
    """A method's ranking as scores n, n-1, ...: the LLM-scored documents by the method's
    score (ties: BM25 order), then the rest in BM25 order."""
    key = {"bm25": None, "fused": "fused", "rubric": "rubric", "single": "single"}[method]
    top = [r for r in rows if r["rubric"] is not None]
    rest = [r for r in rows if r["rubric"] is None]
    if key is not None and all(r[key] is not None for r in top):
        top = sorted(top, key=lambda r: -r[key])
    ordered = [*top, *rest]
    return {r["pid"]: float(len(ordered) - k) for k, r in enumerate(ordered)}


_ITEM = re.compile(r"^\s*(?:(?:question\s*|q)?\d+\s*[.):]|\(\d+\)|[-*•+])\s+(.+)$",
                   re.IGNORECASE)
_SENTENCE = re.compile(r"[^.?!\n]*\?")
_LABEL = re.compile(r"^(?:\d+\s*[.):]\s+|(?:\*\*[^*]+\*\*|__[^_]+__)\s*:?\s*"
                    r"|(?:question|q)\s*\d*\s*[:.-]\s*)+", re.IGNORECASE)


def _from_json(text: str) -> list[str] | None:
    """The strings of the first JSON list in `text` (or of an object's list value), else None."""
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    if isinstance(value, dict):
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if not isinstance(value, list):
        return None
    items = [v.get("question") or v.get("text") if isinstance(v, dict) else v for v in value]
    return [v for v in items if isinstance(v, str)]


def _clean(item: str) -> str:
    """A list item as a question: no label, markdown emphasis or quotes around it."""
    text = _LABEL.sub("", item.strip()).strip()
    return text.replace("**", "").strip(" \"'`").strip()
