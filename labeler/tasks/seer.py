"""SEER evidence-extraction preference pairs (Zhao et al., "SEER: Self-Aligned Evidence
Extraction for Retrieval-Augmented Generation", EMNLP 2024).

For each query q with gold answer a and its top-k passages P, the extractor samples M extractions of
P; blank ones are dropped, and near-duplicates (Kondrak's character n-gram similarity ≥ a threshold,
labeler.metrics.seer.duplicates) too unless de-duplication is off (SEER's "w/o Dup" ablation),
keeping the first. Three experts score each kept extraction e: faithfulness s_f (P entails e),
helpfulness s_h = σ(log P(a | q ⊕ e) − log P(a | q)) with the generator, and conciseness s_c =
cos(SBERT(t), SBERT(e)) with t the generator's full-length answer. Once every shard is scored, the
build settles the smoothing CoV weights α = softmax(CoV/τ) (CoV = σ/μ of each expert over all the
build's extractions), or uniform weights α = 1/3 (SEER's "w/o CoV" ablation); s = α_f·s_f + α_h·s_h
+ α_c·s_c ranks each query's extractions, and every pair with s_w > s_l becomes a preference pair
weighted by λ = |s_w·ΔMRR_{w,l} + s_l·ΔMRR_{l,w}|, ΔMRR_{w,l} = 1/r_w − 1/r_l.

Tables: "data" (one record per query, every kept extraction ranked and scored) and "pairs"
(TRL's preference layout: prompt, chosen, rejected, plus SEER's fields).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from typing import ClassVar

from labeler.errors import InputError, LabelerError
from labeler.llm.base import Chat, Sampling, chat
from labeler.llm.calls import Calls
from labeler.metrics.seer import experts, faithfulness
from labeler.metrics.seer.conciseness import REWRITE, full_answers
from labeler.metrics.seer.duplicates import DUPLICATE_AT, NGRAM, deduplicate
from labeler.metrics.seer.experts import EXPERTS, cov_weights
from labeler.metrics.seer.extraction import Extraction
from labeler.metrics.seer.faithfulness import DEFAULT_FAITHFULNESS, faithfulness_spec
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source
from labeler.tasks.base import LLM, PlannedCall, Shard, Task, TaskConfig

#: The extraction instruction (ours: SEER's code does not publish its prompt); the passages
#: are given as "[i] {title} {text}", one per line.
EXTRACT = (
    "Passages:\n{passages}\n\n"
    "Question: {question}\n\n"
    "Extract from the passages the content that supports answering the question: copy the "
    "relevant sentences, and nothing else. Do not answer the question and do not explain."
)
#: SEER's sampling setting: top_p 1.0, top_k 80, temperature 1.0, repetition penalty 1.0
#: (the backends' default), seeded; M samples of one prompt share its prefill.
SAMPLES = 10
SEED = 0
MAX_EVIDENCE_TOKENS = 256
#: the model role of the extractor, when it is not the generator
EXTRACTOR = "extractor"
#: how the experts' scores are weighted: SEER's smoothing CoV weights, or 1/3 each ("w/o CoV")
WEIGHTINGS = ("cov", "uniform")


@dataclass(frozen=True)
class SeerConfig(TaskConfig):
    """The SEER task's config; k defaults to SEER's top-5 passages."""

    k: int = 5
    samples: int = field(default=SAMPLES, metadata={
        "help": "extractions sampled per query (M)", "min": 1})
    extractor: str | None = field(default=None, metadata={
        "help": "the LLM that extracts [default: the --llm; SEER's: llama2-7b-chat]",
        "metavar": "MODEL"})
    # drop near-duplicate samples; its option is --no-dedup, whose help this is
    dedup: bool = field(default=True, metadata={
        "help": "keep every non-blank sample, near-duplicates and exact repeats too "
                "(SEER's 'w/o Dup' ablation, Table 2 (B))"})
    ngram: int = field(default=NGRAM, metadata={
        "help": "character n-grams of Kondrak's n-gram similarity, which finds near-duplicates",
        "min": 1})
    duplicate_at: float = field(default=DUPLICATE_AT, metadata={
        "help": "Kondrak's n-gram similarity from which an extraction is a duplicate of an "
                "earlier one", "min": 0, "max": 1, "min_open": True})
    faithfulness: str = field(default=DEFAULT_FAITHFULNESS, metadata={
        "help": "llm (the generator as judge), alignscore[:CHECKPOINT] (SEER's) or nli:MODEL",
        "metavar": "SCORER"})
    sbert: str | None = field(default=None, metadata={
        "help": "sentence encoder of conciseness [default: the bundled MiniLM]",
        "metavar": "MODEL"})
    weights: str = field(default="cov", metadata={
        "help": "cov (SEER's smoothing CoV weights) or uniform (1/3 each: SEER's 'w/o CoV' "
                "ablation, Table 2 (C))", "choices": WEIGHTINGS})
    tau: float = field(default=1.0, metadata={
        "help": "temperature of the CoV weights' softmax (SEER tried 0.2, 0.5, 1, 2, 5)",
        "min": 0, "min_open": True})
    max_new_tokens: int = field(default=MAX_EVIDENCE_TOKENS, metadata={
        "help": "cap on each extraction's new tokens", "min": 1})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pool != "rp":
            raise InputError("SEER extracts from the top-k retrieved passages: use --pool rp",
                             field_name="pool")


def extraction_prompt(question: str, passages: Sequence[Passage]) -> Chat:
    """The extractor's input: the numbered passages, then the question."""
    listed = "\n".join(f"[{i}] {p.contents}" for i, p in enumerate(passages, 1))
    return chat(EXTRACT.format(passages=listed, question=question))


def ranked_pairs(weighted: Sequence[float]) -> tuple[list[int], list[tuple[int, int, float]]]:
    """Ranks (1 = best, ties broken by sample order) and the pairs (winner, loser, λ) of
    every two items with s_w > s_l, λ = |s_w·ΔMRR_{w,l} + s_l·ΔMRR_{l,w}| with
    ΔMRR_{w,l} = 1/r_w − 1/r_l; equal scores give no pair.

    >>> ranks, pairs = ranked_pairs([0.2, 0.8, 0.5])
    >>> ranks, [(w, l, round(lam, 4)) for w, l, lam in pairs]
    ([3, 1, 2], [(1, 2, 0.15), (1, 0, 0.4), (2, 0, 0.05)])
    """
    order = sorted(range(len(weighted)), key=lambda i: -weighted[i])
    ranks = [0] * len(weighted)
    for r, i in enumerate(order, 1):
        ranks[i] = r
    pairs = []
    for a, w in enumerate(order):
        for loser in order[a + 1:]:
            if weighted[w] > weighted[loser]:
                delta = 1 / ranks[w] - 1 / ranks[loser]
                lam = weighted[w] * delta + weighted[loser] * -delta
                pairs.append((w, loser, abs(lam)))
    return ranks, pairs


class SeerTask(Task):
    """Sampled, expert-scored, ranked extractions and their lambda-weighted preference pairs."""

    name = "seer"
    summary = ("seer: sampled evidence extractions of the top passages, scored by three "
               "experts, ranked by their CoV-weighted sum and paired with lambda weights for "
               "preference training (SEER).")
    Config = SeerConfig
    operations = ("count_tokens",)  # evidence and passage lengths in the generator's tokens
    answers_from = True
    prompts: ClassVar[dict[str, str]] = {"extract": EXTRACT, **experts.TEMPLATES}
    tables = ("pairs",)
    settles = True
    rows = (
        ("queries", "queries", "count"),
        ("skipped_queries", "queries skipped (no answer or passages)", "count"),
        ("samples", "extractions sampled", "count"),
        ("blank", "blank samples dropped", "count"),
        ("duplicates", "near-duplicates dropped", "count"),
        ("extractions", "extractions scored", "count"),
        ("pairs", "preference pairs", "count"),
        ("mean_faithfulness", "mean faithfulness", "mean"),
        ("mean_helpfulness", "mean helpfulness", "mean"),
        ("mean_conciseness", "mean conciseness", "mean"),
        ("compression", "passage ÷ evidence tokens (the extractor's samples, before training)",
         "mean"),
    )
    metadata: ClassVar[dict] = {
        "pretty_name": "SEER evidence-extraction preference pairs",
        "task_categories": ["text-generation", "question-answering"],
        "tags": ["rag", "evidence-extraction", "preference", "dpo", "seer", "labeler"],
    }

    def __init__(self, config: TaskConfig) -> None:
        super().__init__(config)
        self.config: SeerConfig
        faithfulness_spec(self.config.faithfulness)  # a bad spec fails here

    @cached_property
    def scorers(self) -> experts.Experts:
        """The three experts, their models loaded on first use."""
        return experts.load_experts(self.config.faithfulness, sbert=self.config.sbert)

    @property
    def decoding(self) -> dict[str, Sampling]:
        """The extraction sampling and the greedy full-length answer."""
        c = self.config
        return {
            "extract": Sampling(n=c.samples, temperature=1.0, top_p=1.0, top_k=80,
                                max_tokens=c.max_new_tokens, seed=SEED),
            "full_answer": REWRITE,
        }

    def check(self, source: Source) -> None:
        """SEER extracts for questions with answers; a source of claims has none to help."""
        if source.kind != "question":
            raise InputError(f"SEER extracts evidence for questions, not {source.kind}s",
                             field_name="dataset")

    def planned_calls(self, source: Source, candidates: int, gold: Sequence[int]
                      ) -> list[PlannedCall]:
        """Extractions of the top-k, then the experts on each distinct one."""
        queries, per_query = len(source.queries), candidates / max(len(source.queries), 1)
        extractions = queries * self.config.samples
        judged = "upper bound: duplicate extractions are dropped"
        return [PlannedCall("evidence extractions", extractions, per_query,
                            "exact: queries × samples, one prompt a query", queries),
                *([PlannedCall("faithfulness judgements", extractions, per_query, judged,
                               extractions * len(faithfulness.FAITHFULNESS_CHOICES))]
                  if self.config.faithfulness == "llm" else []),
                PlannedCall("conciseness rewrites", queries, 0, "exact: one a query"),
                PlannedCall("answer likelihoods (helpfulness)", extractions + queries,
                            0, "upper bound: with each extraction, and without")]

    def asks(self, query: Query, pool: Sequence) -> bool:  # a skipped query asks nothing
        return _skip_reason(query, pool[:self.config.k]) is None

    def manifest(self, kind: str = "question") -> dict:
        """The base's part plus the experts, each by name."""
        return {**super().manifest(kind), "experts": self.scorers.describe()}

    @classmethod
    def card_context(cls, manifest: dict) -> dict:
        """The kind of faithfulness scorer the manifest's experts name (llm, alignscore, nli;
        None if unreadable), read case-blind by the one spec parser, for the card's notice
        when it is not SEER's AlignScore."""
        described = (manifest.get("experts") or {}).get("faithfulness") or ""
        try:
            kind = faithfulness_spec(described.casefold())[0]
        except LabelerError:
            kind = None
        return {"faithfulness_kind": kind, "faithfulness_alignscore": kind == "alignscore"}

    def extra_models(self) -> dict[str, str]:
        """The extractor, when it is not the generator."""
        return {EXTRACTOR: self.config.extractor} if self.config.extractor else {}

    def label(self, calls: Mapping[str, Calls], shard: Shard) -> list[dict]:
        """Sample, deduplicate and score the extractions of every query of the shard: the
        extractor extracts (the generator, when there is none), the generator scores."""
        llm = calls[LLM]
        extractor = calls.get(EXTRACTOR, llm)
        c = self.config
        skipped = {q.qid: _skip_reason(q, shard.pools[q.qid][:c.k]) for q in shard.queries}
        todo = [q for q in shard.queries if skipped[q.qid] is None]
        passages = {q.qid: [cand.passage for cand in shard.pools[q.qid][:c.k]] for q in todo}
        samples = extractor.generate([extraction_prompt(q.question, passages[q.qid]) for q in todo],
                               self.decoding["extract"], "extractions", [q.qid for q in todo])
        texts = {q.qid: [s.text.strip() for s in out] for q, out in zip(todo, samples)}
        kept = {q.qid: deduplicate(texts[q.qid], c.ngram, c.duplicate_at if c.dedup else None)
                for q in todo}
        contents = {q.qid: tuple(p.contents for p in passages[q.qid]) for q in todo}
        items = [Extraction(q.question, q.answers[0], texts[q.qid][i], contents[q.qid],
                                    q.qid)
                 for q in todo for i in kept[q.qid]]
        scores = self.scorers.score(llm, items)
        full = dict(zip((q.qid for q in todo), full_answers(llm, [
            Extraction(q.question, q.answers[0], "", contents[q.qid], q.qid)
            for q in todo])))  # asked already by conciseness: served by Calls
        evidence_tokens = llm.backend.count_tokens([x.evidence for x in items])
        passage_tokens = _per_query(todo, llm.backend.count_tokens(
            [p.contents for q in todo for p in passages[q.qid]]), passages)
        evidence_of = _per_query(todo, range(len(items)), kept)
        records = []
        for q in shard.queries:
            record = {"qid": q.qid, "question": q.question, "answers": list(q.answers),
                      "llm": llm.alias, "extractor": extractor.alias, "skipped": skipped[q.qid]}
            if skipped[q.qid] is not None:
                records.append({**record, "candidates": [], "full_answer": None, "samples": 0,
                                "blank": 0, "duplicates": 0, "passage_tokens": 0,
                                "extractions": [], "pairs": 0})
                continue
            pool = shard.pools[q.qid][:c.k]
            n = len(kept[q.qid])
            blank = sum(not text for text in texts[q.qid])
            extractions = [
                {"text": items[at].evidence, "sample": i, "tokens": evidence_tokens[at],
                 "scores": {name: float(scores[name][at]) for name in EXPERTS}}
                for at, i in zip(evidence_of[q.qid], kept[q.qid])
            ]
            records.append({
                **record,
                "candidates": [{"pid": cand.passage.pid, "title": cand.passage.title,
                                "text": cand.passage.text, "rank": cand.rank} for cand in pool],
                "full_answer": full[q.qid],
                "samples": len(texts[q.qid]),
                "blank": blank,
                "duplicates": len(texts[q.qid]) - blank - n,
                "passage_tokens": sum(passage_tokens[q.qid]),
                "extractions": extractions,
                "pairs": 0,
            })
        return records

    def settle(self, records: Iterable[dict]) -> dict:
        """The three experts' weights: their CoV over every extraction of the build, and
        α = softmax(CoV/τ), or 1/3 each with uniform weights (the CoV still recorded)."""
        scores: dict[str, list[float]] = {name: [] for name in EXPERTS}
        for record in records:
            for e in record["extractions"]:
                for name in EXPERTS:
                    scores[name].append(e["scores"][name])
        settled = {"weighting": self.config.weights, "tau": self.config.tau,
                   **cov_weights(scores, self.config.tau)}
        if self.config.weights == "uniform":
            settled["weights"] = {name: 1 / len(EXPERTS) for name in EXPERTS}
        return settled

    def derive(self, records: list[dict], settled: dict) -> dict[str, list[dict]]:
        """Weighted scores and ranks into each record; the pairs table."""
        weights = settled["weights"]
        pairs = []
        for record in records:
            extractions = record["extractions"]
            for e in extractions:
                e["scores"]["weighted"] = sum(weights[n] * e["scores"][n] for n in EXPERTS)
            ranks, found = ranked_pairs([e["scores"]["weighted"] for e in extractions])
            for e, rank in zip(extractions, ranks):
                e["rank"] = rank
            record["pairs"] = len(found)
            prompt = [{"role": m.role, "content": m.content} for m in extraction_prompt(
                record["question"], [Passage(c["pid"], c["title"], c["text"])
                                     for c in record["candidates"]])]
            for w, loser, lam in found:
                chosen, rejected = extractions[w], extractions[loser]
                pairs.append({
                    "qid": record["qid"],
                    "prompt": prompt,
                    "chosen": [{"role": "assistant", "content": chosen["text"]}],
                    "rejected": [{"role": "assistant", "content": rejected["text"]}],
                    "lambda_weight": lam,
                    "chosen_scores": chosen["scores"],
                    "rejected_scores": rejected["scores"],
                    "chosen_rank": chosen["rank"],
                    "rejected_rank": rejected["rank"],
                    "answer": record["answers"][0],
                })
            extractions.sort(key=lambda e: e["rank"])
        return {"data": records, "pairs": pairs}

    @staticmethod
    def statistics(records: Iterable[dict]) -> dict:
        """Counts, the mean and spread of each expert and of the weighted score, and the
        evidence length against the passages' as SEER's Table 1 measures one cell (dataset ×
        generator): the mean over the answered queries of the passage tokens fed to the
        generator, over the mean of their evidence tokens (here a query's evidence is its kept
        samples, each query weighing alike: their mean length, 0 if every sample was blank);
        `compression` is the first over the second."""
        import polars as pl  # only here: `labeler score` does not need it

        queries, extraction_rows = [], []
        for r in records:
            lengths = [e["tokens"] for e in r["extractions"]]
            queries.append((r["skipped"], r["samples"], r["blank"], r["duplicates"], r["pairs"],
                            r["passage_tokens"], len(lengths),
                            sum(lengths) / len(lengths) if lengths else 0.0))
            extraction_rows += [(e["tokens"], *(e["scores"][n] for n in (*EXPERTS, "weighted")))
                                for e in r["extractions"]]
        q = pl.DataFrame(queries, schema={"skipped": pl.String, "samples": pl.Int64,
                                          "blank": pl.Int64, "duplicates": pl.Int64,
                                          "pairs": pl.Int64, "passage_tokens": pl.Int64,
                                          "kept": pl.Int64, "evidence_tokens": pl.Float64},
                         orient="row")
        answered = pl.col("skipped").is_null()
        e = pl.DataFrame(extraction_rows, schema={"tokens": pl.Int64, **{
            n: pl.Float64 for n in (*EXPERTS, "weighted")}}, orient="row")
        counted = q.select(
            queries=pl.len(),
            skipped_queries=pl.col("skipped").is_not_null().sum(),
            skipped_no_answer=(pl.col("skipped") == "no gold answer").sum(),
            skipped_no_passages=(pl.col("skipped") == "no passages").sum(),
            samples=pl.col("samples").sum(),
            blank=pl.col("blank").sum(),
            duplicates=pl.col("duplicates").sum(),
            extractions=pl.col("kept").sum(),
            pairs=pl.col("pairs").sum(),
            mean_passage_tokens=pl.col("passage_tokens").filter(answered).mean(),
            mean_evidence_tokens=pl.col("evidence_tokens").filter(answered).mean(),
        ).row(0, named=True)
        spread = e.select(
            **{f"mean_{n}": pl.col(n).mean() for n in (*EXPERTS, "weighted")},
            **{f"std_{n}": pl.col(n).std(ddof=0) for n in (*EXPERTS, "weighted")},
        ).row(0, named=True)
        stats = {**counted, **spread}
        evidence, passages = stats["mean_evidence_tokens"], stats["mean_passage_tokens"]
        stats["compression"] = passages / evidence if evidence and passages else None
        return {k: (float(v) if isinstance(v, float) else v) for k, v in stats.items()}

    @staticmethod
    def reference(record: dict) -> tuple[dict[str, int], list[str]]:
        """A SEER record judges no passage: it serves `labeler score` as the questions,
        answers and passages that extractions are scored on."""
        return {}, []

    @staticmethod
    def best_evidence(record: dict) -> str:
        """The rank-1 extraction ("" when the record has none: a skipped query)."""
        extractions = record.get("extractions") or []
        return min(extractions, key=lambda e: e["rank"])["text"] if extractions else ""


def _per_query(queries: Sequence[Query], values: Sequence, runs: Mapping[str, Sequence]
               ) -> dict[str, list]:
    """`values` cut into each query's run, in order: as many as `runs[qid]` holds."""
    ends = accumulate(len(runs[q.qid]) for q in queries)
    return {q.qid: list(values[end - len(runs[q.qid]):end]) for q, end in zip(queries, ends)}


def _skip_reason(q: Query, pool: Sequence) -> str | None:
    answered = any(a.strip() for a in q.answers)  # none, or blank: no gold answer
    return ("no passages" if not pool else None) if answered else "no gold answer"
