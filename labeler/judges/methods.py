"""Utility judgments by the LLM itself (Zhang et al., "LLM-Specific Utility for RAG", §5): how
well existing methods estimate which passages are gold utilitarian for it.

One `Judge`, one method table: each method says only its prompts and how it reads the answers.

- `pvs`: pointwise verbalized selection, one prompt per passage; yes iff the lower-cased
  output holds ": yes" or " yes" (the paper's evaluation/set-evaluation.py); P(yes) is recorded
  beside it (`choice_probs` after "Utility judgment:").
- `lvs`: listwise verbalized selection, one multi-turn chat per query; the ids `[i]` of the
  answer, first mention first, those outside 1..k dropped.
- `lvr`: listwise verbalized ranking, the same turns; the ids named, scored k - position, as the
  paper's evaluation/ranking-evaluation.py writes its run: a query whose answer names none has
  no ranking (pytrec_eval, and `labeler score`, leave it out). `fill_unranked` ranks the
  passages not named after them, in retrieval order.
- `likelihood`: log P(pseudo-answer | with-passage prompt) per passage, ranked.
- `retrieval`: the pool's own order, the baseline.
- `attention`: AttR, the attention the LLM's answer pays to each passage
  (`labeler.judges.attention`; hf backend only).

The prompts are the paper's code's, byte for byte (`labeler.judges.prompts`), for questions and
for claims (FEVER). With `with_answer` (and always for `likelihood`) the LLM's own greedy answer
with all top-k passages, asked with the utility task's with-passage prompt, is the
pseudo-answer. A listwise passage turn shows the paper's dataset row (`passage_format`
"paper") or "{title} {text}" ("clean"). A selection record is {qid, selected}, a ranking
{qid, ranking} or {qid, scores}; both keep what the LLM said.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from labeler.errors import InputError, UnknownNameError
from labeler.judges.attention import attention_ranking
from labeler.judges.prompts import (
    LIKELIHOOD,
    PASSAGE_FORMATS,
    PROMPTS,
    format_passage,
    render_passage,
)
from labeler.llm.base import (
    ChoiceRequest,
    LoglikelihoodRequest,
    Message,
    Sampling,
    chat,
    yes_probability,
)
from labeler.llm.calls import Calls
from labeler.retrieval import Candidate
from labeler.sources.types import Query
from labeler.tasks.base import Shard, TaskConfig
from labeler.tasks.utility import ANSWER, MAX_NEW_TOKENS, TEMPLATES_BY_KIND, evidence_prompt

#: the assistant prefix after which P(yes) is read (the paper's `_prob` prompts)
JUDGMENT_PREFIX = "Utility judgment:"
YES_NO = (" Yes", " No")
#: the templates whose chats the LLM answers greedily (the judgments)
ANSWERED = ("judgment", "question")


@dataclass(frozen=True)
class Method:
    """One judge method: what it submits, its prompt templates by kind of query, and whether it
    takes (or always needs) the pseudo-answer. A method with templates judges only the kinds
    of query they name."""

    kind: str  # "selection" | "ranking"
    submit: Callable  # (judge, llm, shard, pseudo-answers by qid) -> one record per query
    #: query kind -> template name -> text, no pseudo-answer
    templates: dict[str, dict[str, str]] = field(default_factory=dict)
    with_answer: dict[str, dict[str, str]] | None = None  # the same with it; None: no variant
    needs_answer: bool = False  # asks with the pseudo-answer whatever `with_answer` says
    operation: str | None = None  # the optional backend operation it needs (OPTIONAL_OPERATIONS)


@dataclass(frozen=True)
class JudgeConfig(TaskConfig):
    """The judge's config: the pools are the labels' (`TaskConfig`), then the method."""

    method: str = "pvs"  # a key of METHODS
    with_answer: bool = field(default=False, metadata={
        "help": "pvs, lvs, lvr: show the LLM's own answer with all top-k passages as a "
                "reference answer"})
    max_new_tokens: int = field(default=MAX_NEW_TOKENS, metadata={
        "help": "Cap on each judgment's and pseudo-answer's new tokens", "min": 1})
    passage_format: str = field(default="paper", metadata={
        "help": "lvs, lvr: a passage turn shows paper (the dataset row as the paper's code "
                "prints it, {'docid': ..., 'title': ..., 'text': ...}) or clean (title text)",
        "choices": PASSAGE_FORMATS})
    fill_unranked: bool = field(default=False, metadata={
        "help": "lvr: rank the passages the LLM did not name after the named ones, in "
                "retrieval order (the paper ranks only the named ones, and a query whose "
                "answer names none not at all)"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method not in METHODS:
            raise UnknownNameError("judge method", self.method, list(METHODS))
        if self.with_answer and METHODS[self.method].with_answer is None:
            why = ("always scores the pseudo-answer" if METHODS[self.method].needs_answer
                   else "reads its own answer" if METHODS[self.method].operation
                   else "asks the LLM nothing")
            raise InputError(f"--with-answer does not apply to {self.method}, which {why}",
                             field_name="with_answer")
        if self.passage_format not in PASSAGE_FORMATS:
            raise UnknownNameError("passage format", self.passage_format, list(PASSAGE_FORMATS))
        if self.passage_format != "paper" and self.method not in ("lvs", "lvr"):
            raise InputError(f"--passage-format applies to lvs and lvr, not {self.method}",
                             field_name="passage_format")
        if self.fill_unranked and self.method != "lvr":
            raise InputError(f"--fill-unranked applies to lvr, not {self.method}",
                             field_name="fill_unranked")
        if self.answer_extractor:
            raise InputError("--answer-extractor does not apply to judge: no judgment reads the "
                             "gold answers", field_name="answer_extractor")


class Judge:
    """One judge method with its settings: what it asks the LLM, and the submission records
    it writes, one per query."""

    rows = (
        ("queries", "queries", "count"),
        ("candidates", "candidate passages judged", "count"),
        ("mean_selected", "selected passages / query", "mean"),
        ("empty_selections", "queries with nothing selected", "count"),
        ("unparsed", "answers that named no passage", "count"),
    )

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.method = METHODS[config.method]
        self.asks_answer = self.method.needs_answer or config.with_answer
        #: pseudo-answers: the utility task's greedy answers; judgments: greedy, same cap
        self.answer = replace(ANSWER, max_tokens=config.max_new_tokens)
        judges = any(name in ANSWERED for names in self.method.templates.values()
                     for name in names)
        self.decoding = ({"answer": self.answer} if self.asks_answer else {}) | (
            {"judgment": self.answer} if judges else {})

    @property
    def kind(self) -> str:
        """What this method submits: "selection" or "ranking"."""
        return self.method.kind

    def templates(self, kind: str = "question") -> dict[str, str]:
        """The method's templates for `kind` of query (with the pseudo-answer's when it asks
        with one); InputError for a kind the paper has no prompts for."""
        method = self.method
        if kind not in TEMPLATES_BY_KIND or (method.templates and kind not in method.templates):
            raise InputError(f"{self.config.method} has no prompts for {kind}s",
                             field_name="dataset")
        chosen = (method.with_answer if self.config.with_answer else method.templates) or {}
        return {**chosen.get(kind, {}), **(
            {"pseudo_answer": TEMPLATES_BY_KIND[kind]["with_passage"]} if self.asks_answer
            else {})}

    def submit(self, llm: Calls | None, shard: Shard) -> list[dict]:
        """One submission record per query of `shard`, the pseudo-answers first, in one
        batched call; `retrieval` asks no LLM, so it takes none."""
        answers = pseudo_answers(llm, shard, self.answer) if self.asks_answer else {}
        records = self.method.submit(self, llm, shard, answers)
        for record in records:
            if record["qid"] in answers:
                record["pseudo_answer"] = answers[record["qid"]]
        return records

    @staticmethod
    def statistics(records: Iterable[dict]) -> dict:
        """`queries`, `candidates` judged; for selections `mean_selected` and
        `empty_selections`; `unparsed`: listwise answers from which no id was read."""
        records = list(records)
        selected = [len(set(r["selected"])) for r in records if "selected" in r]
        return {
            "queries": len(records),
            "candidates": sum(r["candidates"] for r in records),
            "mean_selected": sum(selected) / len(selected) if selected else None,
            "empty_selections": sum(1 for n in selected if n == 0) if selected else None,
            "unparsed": (sum(1 for r in records if r["parsed"] == 0)
                         if records and "parsed" in records[0] else None),
        }


def says_yes(output: str) -> bool:
    """The paper's reading of a pointwise judgment: yes iff the lower-cased output holds
    ": yes" or " yes".

    >>> says_yes("Utility judgment: Yes."), says_yes("Utility judgment: No."), says_yes("Yes")
    (True, False, False)
    """
    text = output.lower()
    return ": yes" in text or " yes" in text


def named_passages(output: str, k: int) -> list[int]:
    """0-based positions of the passages `[i]` an answer names, first mention first, each
    once; ids outside 1..k are dropped.

    >>> named_passages("My selection:[[3],[1],[3],[9]].", 3)
    [2, 0]
    """
    positions = dict.fromkeys(int(n) - 1 for n in re.findall(r"\[(\d+)\]", output))
    return [i for i in positions if 0 <= i < k]


def pseudo_answers(llm: Calls, shard: Shard, sampling: Sampling) -> dict[str, str]:
    """qid -> the LLM's greedy answer with all of its candidates (the utility task's prompt,
    so a utility build with the same cap has it cached)."""
    qids = [q.qid for q in shard.queries]
    prompts = [evidence_prompt(q.question, [c.passage for c in shard.pools[q.qid]], shard.kind)
               for q in shard.queries]
    outputs = llm.generate(prompts, sampling, "pseudo-answers", qids)
    return {qid: out[0].text.strip() for qid, out in zip(qids, outputs)}


def _pointwise(judge: Judge, llm: Calls, shard: Shard, answers: dict[str, str]) -> list[dict]:
    pairs = [(q, c) for q in shard.queries for c in shard.pools[q.qid]]
    names = [f"{q.qid}, passage {c.passage.pid}" for q, c in pairs]
    template = judge.templates(shard.kind)["judgment"]
    prompts = [chat(template.format(question=q.question, passage=format_passage(c.passage),
                                    answer=answers.get(q.qid, ""))) for q, c in pairs]
    outputs = llm.generate(prompts, judge.answer, "pointwise judgments", names)
    probs = llm.choice_probs([ChoiceRequest(p + (Message("assistant", JUDGMENT_PREFIX),), YES_NO)
                              for p in prompts], "pointwise P(yes)", names)
    judged: dict[str, list[dict]] = {q.qid: [] for q in shard.queries}
    for (q, c), out, prob in zip(pairs, outputs, probs):
        judged[q.qid].append({"pid": c.passage.pid, "output": out[0].text,
                              "yes": says_yes(out[0].text),
                              "p_yes": yes_probability(prob, *YES_NO)})
    return [{"qid": qid, "selected": [j["pid"] for j in rows if j["yes"]],
             "candidates": len(rows), "judgments": rows} for qid, rows in judged.items()]


def _listwise_label(judge: Judge, llm: Calls, shard: Shard,
                    answers: dict[str, str]) -> list[dict]:
    asked = [q for q in shard.queries if shard.pools[q.qid]]
    templates = judge.templates(shard.kind)
    prompts = [_listwise_chat(templates, q, shard.pools[q.qid], answers.get(q.qid, ""),
                              judge.config.passage_format) for q in asked]
    what = "listwise selections" if judge.kind == "selection" else "listwise rankings"
    outputs = dict(zip((q.qid for q in asked),
                       llm.generate(prompts, judge.answer, what, [q.qid for q in asked])))
    records = []
    for q in shard.queries:
        pool = shard.pools[q.qid]
        output = outputs[q.qid][0].text if q.qid in outputs else ""
        named = named_passages(output, len(pool))
        pids = [pool[i].passage.pid for i in named]
        record = {"qid": q.qid, "candidates": len(pool), "output": output, "parsed": len(named)}
        if judge.kind == "selection":
            record["selected"] = pids
        elif judge.config.fill_unranked:  # the named ones, then the others in retrieval order
            record["ranking"] = pids + [c.passage.pid for c in pool if c.passage.pid not in pids]
        else:  # the named ones only, as the paper's run file; none named: no run lines
            record["ranking"] = pids
        records.append(record)
    return records


def _listwise_chat(templates: dict[str, str], q: Query, pool: list[Candidate],
                   answer: str, passage_format: str) -> tuple[Message, ...]:
    turns = [Message("user", templates["intro"].format(num=len(pool), question=q.question)),
             Message("assistant", templates["ready"])]
    for rank, c in enumerate(pool, 1):
        turns += [Message("user", templates["passage"].format(
                      rank=rank, passage=render_passage(c.passage, passage_format))),
                  Message("assistant", templates["received"].format(rank=rank))]
    turns.append(Message("user", templates["question"].format(question=q.question,
                                                              answer=answer)))
    return tuple(turns)


def _likelihood(judge: Judge, llm: Calls, shard: Shard, answers: dict[str, str]) -> list[dict]:
    pairs = [(q, c) for q in shard.queries for c in shard.pools[q.qid]]
    template = judge.templates(shard.kind)["likelihood"]
    scores = llm.loglikelihood(
        [LoglikelihoodRequest(chat(template.format(passage=format_passage(c.passage),
                                                   question=q.question)), answers[q.qid])
         for q, c in pairs], "pseudo-answer likelihoods",
        [f"{q.qid}, passage {c.passage.pid}" for q, c in pairs])
    by_qid: dict[str, dict[str, float]] = {q.qid: {} for q in shard.queries}
    for (q, c), score in zip(pairs, scores):
        by_qid[q.qid][c.passage.pid] = score
    return [{"qid": qid, "scores": s, "candidates": len(s)} for qid, s in by_qid.items()]


def _retrieval(judge: Judge, llm: Calls | None, shard: Shard,
               answers: dict[str, str]) -> list[dict]:
    return [{"qid": q.qid, "ranking": [c.passage.pid for c in shard.pools[q.qid]],
             "candidates": len(shard.pools[q.qid])} for q in shard.queries]


def _by_kind(method: str) -> tuple[dict, dict]:
    """(templates, templates with the pseudo-answer) of `method`, each by kind of query."""
    return ({kind: p[method][0] for kind, p in PROMPTS.items()},
            {kind: p[method][1] for kind, p in PROMPTS.items()})


#: method name -> Method; the one list of judge methods
METHODS: dict[str, Method] = {
    "pvs": Method("selection", _pointwise, *_by_kind("pvs")),
    "lvs": Method("selection", _listwise_label, *_by_kind("lvs")),
    "lvr": Method("ranking", _listwise_label, *_by_kind("lvr")),
    "likelihood": Method("ranking", _likelihood,
                         {kind: {"likelihood": text} for kind, text in LIKELIHOOD.items()},
                         needs_answer=True),
    "retrieval": Method("ranking", _retrieval),
    "attention": Method("ranking", attention_ranking,
                        {kind: {"with_passage": t["with_passage"]}
                         for kind, t in TEMPLATES_BY_KIND.items()}, operation="attention"),
}
