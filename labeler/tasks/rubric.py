"""Bag-of-decisions reranking: a query becomes a bag of yes/no questions instead of a bag of
words, and a document's score is the sum of P(yes) over the questions.

The LLM writes the questions with the original experiment's prompts and response schema
(`labeler.tasks.rubric_questions`: constrained to the schema where the backend can, read as free
text otherwise); blanks, exact and near duplicates (embedding cosine >= 0.9, the bundled MiniLM)
go, at most `max_questions` stay. A query whose output yields no question is asked again once
with a new seed, then recorded as empty. For each of the BM25 top `rerank_k` documents and each
question, a chat with the document's state first (the experiment's bag state, "{title}\n
{description}\n": `labeler.sources.search_experiments`), then the question, gives P(yes) =
p(yes) / (p(yes) + p(no)), each summed over casing and leading-space variants (the state-first
order lets the hf backend prefill each document once for all its questions). With c(p) = p, or
with `threshold` t, c(p) = p if p > t else 0 (the bag at 8306f4f: strategy.py's default t = 0.7):

    rubric(q, d) = Σ_i c(P(yes | d, question_i))      fused(q, d) = BM25(q, d) + w · rubric(q, d)

on the top K, the rest keeping BM25 order (fused = BM25 there, below every reranked one). The
direct arm (`direct`; its records' `single`) asks the experiment's one fixed question with its
true/false criteria on its own state ("Search query: … Candidate product: Title: …
Description: …"), ranked by c(P(yes)) and fused like the rubric: single_fused = BM25 + w ·
c(P(yes)).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from labeler.errors import InputError
from labeler.formats import Run
from labeler.lazy import LazyModule
from labeler.llm.base import ChoiceRequest, Sampling
from labeler.llm.calls import Calls
from labeler.metrics.fusion import counted, linear_fusion
from labeler.metrics.ranking import rank_metrics
from labeler.metrics.significance import paired_t_test
from labeler.sources.sampling import SEED, seeded_sample
from labeler.sources.search_experiments import (
    ARMS,
    BAG_STATE,
    DIRECT_CRITERIA,
    DIRECT_QUESTION,
    DIRECT_STATE,
)
from labeler.sources.types import Source
from labeler.tasks.base import LLM, PlannedCall, Shard, Task, TaskConfig
from labeler.tasks.rubric_judge import (
    JUDGE_CRITERIA,
    JUDGE_QUESTION,
    JUDGE_SYSTEM,
    NO,
    YES,
    bag_state,
    direct_prompt,
    judge_prompt,
    p_yes,
)
from labeler.tasks.rubric_questions import (
    GENERATE,
    GENERATE_SYSTEM,
    GENERATE_USER,
    RESPONSE_FORMAT,
    RESPONSE_SCHEMA,
    generation_prompt,
    generation_sampling,
    read_questions,
)

#: imported on first use, so that reading this module (`build --help` does) stays cheap
np = LazyModule("numpy")

PROMPT_TEMPLATES = {"generate_system": GENERATE_SYSTEM, "generate_user": GENERATE_USER,
                    "response_format": RESPONSE_FORMAT, "response_schema": RESPONSE_SCHEMA,
                    "judge_system": JUDGE_SYSTEM, "judge_question": JUDGE_QUESTION,
                    "judge_criteria": JUDGE_CRITERIA, "bag_state": BAG_STATE,
                    "direct_state": DIRECT_STATE, "direct_question": DIRECT_QUESTION,
                    "direct_true": DIRECT_CRITERIA["true"],
                    "direct_false": DIRECT_CRITERIA["false"]}
#: questions whose embeddings are at least this close are near duplicates
NEAR_DUPLICATE = 0.9
#: the cut-off of the reported NDCG
NDCG_K = 10
#: the fused ranking, written beside the tables as a TREC run
RUN_FILE = "fused.trec"
#: the rankings reported, each but BM25 tested against BM25
METHODS = ("bm25", "single", "single_fused", "rubric", "fused")
METHOD_NAMES = {"bm25": "BM25", "single": "direct question alone",
                "single_fused": "direct question fused", "rubric": "rubric alone",
                "fused": "rubric fused"}


@dataclass(frozen=True)
class RubricConfig(TaskConfig):
    """The rubric task's config: BM25 candidates, reranked by the LLM's yes/no questions."""

    encoder: str | None = "bm25"  # the first stage; fused adds to its scores
    max_questions: int = field(default=10, metadata={
        "help": "questions kept per query", "min": 1})
    weight: float = field(default=ARMS["bag"].decision_weight, metadata={
        "help": "w in fused = BM25 + w · rubric (the experiment's configs' decision_weight)"})
    rerank_k: int = field(default=ARMS["bag"].k, metadata={
        "help": "the BM25 top K the LLM scores (the experiment's configs' k)", "min": 1})
    direct: bool = field(default=False, metadata={
        "help": "also score the experiment's direct arm (one fixed question, \"Does this "
                "candidate product satisfy the search query ...?\", with its criteria and "
                "state), alone and fused with BM25"})
    sample: int | None = field(default=None, metadata={
        "help": "label N queries drawn with --sample-seed as the experiment draws them "
                "(pandas' DataFrame.sample) [default: all, or the first --limit]",
        "metavar": "N", "min": 1})
    sample_seed: int = field(default=SEED, metadata={"help": "the seed of --sample"})
    threshold: float | None = field(default=None, metadata={
        "help": "sum only the P(yes) above P (the experiment's bag at 8306f4f: 0.7) "
                "[default: none, every P(yes)]", "metavar": "P", "min": 0.0, "max": 1.0})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sample is not None and self.limit is not None:
            raise InputError("--sample draws from every query: leave --limit unset",
                             field_name="sample")
        if self.run is None and self.encoder != "bm25":
            raise InputError(f"the rubric fuses with BM25 scores, not {self.encoder}'s",
                             field_name="encoder", hint="leave --encoder unset (bm25) or pass "
                                                        "a BM25 run with --run")

    def select(self, source: Source) -> Source:
        """The experiment's seeded sample of `sample` queries, or every query loaded."""
        return source if self.sample is None else seeded_sample(source, self.sample,
                                                                self.sample_seed)

    def drawn(self) -> tuple[int, int] | None:
        return None if self.sample is None else (self.sample, self.sample_seed)

    def counted(self, p: float) -> float:
        """What one P(yes) adds to a score: p, or 0 when not above `threshold`."""
        return counted(p, self.threshold)


class RubricTask(Task):
    """Questions per query, P(yes) per (question, document), rubric and fused scores."""

    name = "rubric"
    summary = ("rubric: the LLM writes yes/no questions per query; each BM25 top-K document "
               "scores Σ P(yes) over them, fused with BM25 (bag-of-decisions reranking); "
               "search data: cisi-sample, or search:QUERIES (TSV or JSONL) with --corpus and "
               "--qrels.")
    Config = RubricConfig
    prompts = PROMPT_TEMPLATES
    tables = ("candidates",)
    rows = (
        ("queries", "queries", "count"),
        ("questions", "questions kept", "count"),
        ("mean_questions", "questions / query", "mean"),
        ("retried", "queries asked again (no question)", "count"),
        ("empty", "queries left without a question", "count"),
        ("structured", "queries generated under the JSON schema", "count"),
        ("fallback", "queries whose questions were read as free text", "count"),
        ("scored", "documents scored by the LLM", "count"),
        ("judged_queries", "queries with human judgments", "count"),
        *((f"ndcg@{NDCG_K}_{m}", f"NDCG@{NDCG_K} {label}", "mean")
          for m, label in METHOD_NAMES.items()),
        *((f"{m}_vs_bm25_p", f"{label} vs BM25: paired t-test p", "mean")
          for m, label in METHOD_NAMES.items() if m != "bm25"),
    )
    metadata: ClassVar[dict] = {
        "pretty_name": "Bag-of-decisions rubrics: yes/no questions and P(yes) per document",
        "task_categories": ["text-retrieval", "text-ranking"],
        "tags": ["reranking", "llm-as-judge", "bag-of-decisions", "rubric", "labeler"],
    }

    def __init__(self, config: RubricConfig) -> None:
        super().__init__(config)
        self._encoder = None

    @property
    def decoding(self) -> dict[str, Sampling]:
        """The questions' generation (P(yes) is read, not decoded)."""
        return {"generate": GENERATE}

    def scoring(self) -> tuple[str, ...]:
        return ("choice_probs",)  # P(yes)

    def planned_calls(self, source: Source, candidates: int, gold: Sequence[int]
                      ) -> list[PlannedCall]:
        """Questions per query, then P(yes) per question and document."""
        queries = len(source.queries)
        asked = self.config.max_questions + self.config.direct
        scored = min(self.config.rerank_k, candidates / max(queries, 1))
        return [PlannedCall("rubric questions", queries, 0,
                            "exact (asked again where a reply has none)"),
                PlannedCall("P(yes)", int(queries * scored * asked), 1,
                            "upper bound: every query's full rubric on each of its candidates",
                            int(queries * scored * asked) * len(YES + NO))]

    def check(self, source: Source) -> None:
        if source.corpus is None and self.config.run is None:
            raise InputError(f"dataset '{source.name}' has no documents to rank",
                             field_name="corpus", hint="pass --corpus FILE or --run FILE")

    def label(self, calls: Mapping[str, Calls], shard: Shard) -> list[dict]:
        """Questions for every query (one batched call, one more for the retries; under the
        JSON schema where the backend can), then P(yes) for every (document, question) of
        every query in one batched call."""
        llm, queries, config = calls[LLM], shard.queries, self.config
        qids = [q.qid for q in queries]
        structured = llm.backend.structured_output
        prompts = [generation_prompt(q.question) for q in queries]
        texts = [c[0].text for c in llm.generate(prompts, generation_sampling(structured),
                                                 "rubric questions", qids)]
        parsed = [read_questions(t) for t in texts]
        retried = [i for i, (found, _) in enumerate(parsed) if not found]
        if retried:
            again = llm.generate([prompts[i] for i in retried],
                                 generation_sampling(structured, seed=1),
                                 "rubric questions, asked again", [qids[i] for i in retried])
            for i, samples in zip(retried, again):
                texts[i] = samples[0].text
                parsed[i] = read_questions(texts[i])
        kept = self._distinct([found for found, _ in parsed])
        requests, names = [], []
        for q, questions in zip(queries, kept):
            for c in shard.pools[q.qid][:config.rerank_k]:
                state = bag_state(q.question, c.passage)
                chats = [judge_prompt(state, text) for text in questions]
                chats += [direct_prompt(q.question, c.passage)] if config.direct else []
                requests += [ChoiceRequest(chat_, YES + NO) for chat_ in chats]
                names += [f"{q.qid}, document {c.passage.pid}"] * len(chats)
        probs = iter(llm.choice_probs(requests, "P(yes)", names))
        records = []
        for i, q in enumerate(queries):
            candidates = []
            for j, c in enumerate(shard.pools[q.qid]):
                scored = j < config.rerank_k
                answers = [p_yes(next(probs)) for _ in kept[i]] if scored else []
                single = p_yes(next(probs)) if scored and config.direct else None
                candidates.append({"pid": c.passage.pid, "bm25": c.score, "p_yes": answers,
                                   "single": single, "scored": scored})
            relevance = q.relevance or {g.pid: 1 for g in q.gold}
            records.append({"qid": q.qid, "query": q.question, "llm": llm.alias,
                            "output": texts[i], "retried": i in retried,
                            "structured": structured, "fallback": parsed[i][1],
                            "questions": [{"id": f"{q.qid}-{n}", "text": t}
                                          for n, t in enumerate(kept[i], 1)],
                            "relevance": relevance, "candidates": candidates})
        return records

    def derive(self, records: list[dict], settled: dict) -> dict[str, list[dict]]:
        """data: one record per query with its questions and NDCG@10 per method (when it has
        judgments); candidates: one per document with its scores and fused rank."""
        data = []
        rows, runs = self.rankings(records)
        judged = [r["qid"] for r in records if any(v > 0 for v in r["relevance"].values())]
        qrels = {r["qid"]: r["relevance"] for r in records}
        ndcg = {m: dict(zip(judged, rank_metrics(runs[m], qrels, ks=[NDCG_K],
                                                 qids=judged)[f"ndcg@{NDCG_K}"].tolist()))
                for m in METHODS} if judged else {}
        for record in records:
            qid = record["qid"]
            values = {m: ndcg[m][qid] for m in METHODS} if qid in ndcg.get("bm25", {}) else None
            if values is not None and not self.config.direct:
                values["single"] = values["single_fused"] = None
            data.append({k: v for k, v in record.items() if k != "candidates"}
                        | {"scored": sum(c["scored"] for c in record["candidates"]),
                           f"ndcg@{NDCG_K}": values})
        return {"data": data, "candidates": rows}

    def rankings(self, records: Sequence[dict]
                 ) -> tuple[list[dict], dict[str, dict[str, dict[str, float]]]]:
        """The candidate rows of labelled `records` (`_scores`), and each method's ranking
        of every query as a run (method -> qid -> pid -> score, the best scored highest)."""
        rows: list[dict] = []
        runs: dict[str, dict[str, dict[str, float]]] = {m: {} for m in METHODS}
        for record in records:
            scored = self._scores(record)
            rows.extend(scored)
            for method in METHODS:
                runs[method][record["qid"]] = _ranked(scored, self._ranking_score(method))
        return rows, runs

    def labelled(self, tables: Mapping[str, list[dict]]) -> list[dict]:
        """What `derive` was given, from what it wrote: each data record with its candidate
        rows back as its candidates, in BM25 order."""
        rows: dict[str, list[dict]] = {}
        for row in tables["candidates"]:
            rows.setdefault(row["qid"], []).append(row)
        return [{k: v for k, v in r.items() if k not in ("scored", f"ndcg@{NDCG_K}")}
                | {"candidates": [{"pid": c["pid"], "bm25": c["bm25"], "p_yes": c["p_yes"],
                                   "single": c["single"], "scored": c["rubric"] is not None}
                                  for c in sorted(rows.get(r["qid"], []),
                                                  key=lambda c: c["bm25_rank"])]}
                for r in tables["data"]]

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
        `structured` (generated under the JSON schema), `fallback` (questions read as free
        text), `scored` (documents the LLM scored), `judged_queries` (with a relevant
        judgment), `ndcg@10_<method>` (mean over the judged queries; single and single_fused:
        None unless asked) and `<method>_vs_bm25_p` with `<method>_vs_bm25` (the two-sided
        paired t-test against BM25)."""
        records = list(records)
        n = len(records)
        questions = [len(r["questions"]) for r in records]
        judged = [r[f"ndcg@{NDCG_K}"] for r in records if r[f"ndcg@{NDCG_K}"] is not None]
        stats = {"queries": n, "questions": sum(questions),
                 "mean_questions": sum(questions) / n if n else None,
                 "retried": sum(r["retried"] for r in records),
                 "empty": sum(not q for q in questions),
                 "structured": sum(r["structured"] for r in records),
                 "fallback": sum(r["fallback"] for r in records),
                 "scored": sum(r["scored"] for r in records), "judged_queries": len(judged)}
        values = {m: np.array([np.nan if v[m] is None else v[m] for v in judged], dtype=float)
                  for m in METHODS}
        for method in METHODS:
            known = values[method][~np.isnan(values[method])]
            stats[f"ndcg@{NDCG_K}_{method}"] = float(known.mean()) if known.size else None
        for method in METHODS[1:]:
            test = paired_t_test(values[method], values["bm25"]) if judged else None
            usable = test is not None and test.n > 1  # one query: no test (t, p NaN)
            stats[f"{method}_vs_bm25"] = test.as_dict() if usable else None
            stats[f"{method}_vs_bm25_p"] = test.p if usable and np.isfinite(test.p) else None
        return stats

    @staticmethod
    def reference(record: dict) -> tuple[dict[str, int], list[str]]:
        """The human judgments a record carries, and its relevant documents as the gold set."""
        labels = dict(record["relevance"])
        return labels, [pid for pid, label in labels.items() if label > 0]

    def _scores(self, record: dict) -> list[dict]:
        """One row per candidate: rubric = Σ c(P(yes)), fused = BM25 + w · rubric and
        single_fused = BM25 + w · c(single) on the top K (BM25 elsewhere), and the rank in the
        fused order (ties: BM25 order)."""
        rows, config = [], self.config
        for bm25_rank, c in enumerate(record["candidates"], 1):
            bm25, single = c["bm25"], c["single"]
            rubric = float(sum(map(config.counted, c["p_yes"]))) if c["scored"] else None
            fused = linear_fusion(bm25, rubric, config.weight)
            single_fused = bm25 if not c["scored"] else None if single is None \
                else linear_fusion(bm25, config.counted(single), config.weight)
            rows.append({"qid": record["qid"], "pid": c["pid"], "bm25": bm25,
                         "bm25_rank": bm25_rank, "p_yes": c["p_yes"], "rubric": rubric,
                         "single": single, "single_fused": single_fused, "fused": fused,
                         "label": record["relevance"].get(c["pid"])})
        order = sorted(rows, key=lambda r: -r["fused"])  # stable: ties keep BM25 order
        for rank, row in enumerate(order, 1):
            row["rank"] = rank
        return rows

    def _ranking_score(self, method: str) -> Callable[[dict], float | None] | None:
        """The score a method ranks the LLM-scored candidates by (None: BM25 order)."""
        if method == "single":
            return lambda r: None if r["single"] is None else self.config.counted(r["single"])
        return None if method == "bm25" else lambda r: r[method]

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


def _ranked(rows: Sequence[dict], score: Callable[[dict], float | None] | None
            ) -> dict[str, float]:
    """A ranking as scores n, n-1, ...: the LLM-scored documents by `score` (ties: BM25
    order; BM25 order when None or unknown for one), then the rest in BM25 order."""
    top = [r for r in rows if r["rubric"] is not None]
    rest = [r for r in rows if r["rubric"] is None]
    if score is not None and all(score(r) is not None for r in top):
        top = sorted(top, key=lambda r: -score(r))
    ordered = [*top, *rest]
    return {r["pid"]: float(len(ordered) - k) for k, r in enumerate(ordered)}
