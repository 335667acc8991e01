"""`labeler reproduce utility-paper --dry-run`: the whole run's plan, from its checks alone.

Each unfinished build's rows are `labeler build --dry-run`'s (`labeler.workflows.plan`),
after every check it makes; the judges', scores' and comparisons' calls are bounded from the
same counts (a pointwise judge asks once per candidate, a listwise one once per query, a
pseudo-answer once per query), their prompt tokens estimated from characters as the build's
are. A finished step shows as done: the run skips it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labeler.judges.methods import METHODS
from labeler.llm.config import LLMConfig
from labeler.workflows.plan import CHARS_PER_TOKEN, mean_chars, plan, queries_count
from labeler.workflows.reproduce.utility_steps import (
    ReproduceConfig,
    Step,
    aliases_of,
    steps,
    work_folder,
)
from labeler.workflows.steps import config_source

Row = tuple[str, str, str]


def plan_rows(config: ReproduceConfig, llms: Sequence[LLMConfig], *, out: str | Path = "out",
              cache_dir: str | Path | None = None) -> list[Row]:
    """(step, count, how known) rows of everything `reproduce` would do with these
    settings; no model is loaded and nothing is written."""
    aliases = aliases_of(llms)
    every = steps(config, aliases, out)
    by_alias = dict(zip(aliases, llms))
    rows: list[Row] = []
    for dataset in config.datasets:
        for pool in config.pools(dataset):
            built = [s for s in every if s.what == "build" and s.dataset == dataset
                     and s.pool == pool]
            missing = [by_alias[s.llm] for s in built if not s.done()]
            rows.append((f"{dataset} {pool}: build utility",
                         f"{len(built) - len(missing)} of {len(built)} LLMs done", "exact"))
            if missing:
                rows += [(f"  {what}", count, how) for what, count, how in plan(
                    "utility", config.utility(dataset, pool), missing,
                    out=work_folder(out) / pool, version="1", cache_dir=cache_dir)
                    if what != "LLMs"]
        rows += _judge_rows(config, dataset, [s for s in every if s.dataset == dataset])
    rows.append(("LLMs", ", ".join(aliases), "none loaded by a dry run"))
    return rows


def _judge_rows(config: ReproduceConfig, dataset: str, mine: Sequence[Step]) -> list[Row]:
    """The judges' (then the scores' and the comparison's) calls and prompt tokens on
    `dataset`'s rp pool; upper bounds (estimates where the queries are counted from the head
    of a file not downloaded)."""
    utility = config.utility(dataset, "rp")
    source = config_source(utility, stored_only=True)
    queries, counted = queries_count(source, utility.limit)
    bound = "upper bound" if counted.startswith("exact") else "estimate (queries not downloaded)"
    candidates = queries * config.k
    question = sum(len(q.question) for q in source.queries) / max(len(source.queries), 1)
    passage = mean_chars(source)

    def tokens(calls: int, passages: float) -> int:
        return int(calls * (question + passages * passage) / CHARS_PER_TOKEN)

    rows = []
    for step in (s for s in mine if s.what == "judge"):
        method = METHODS[step.method]
        name = f"{dataset}: judge {step.method}{' with answer' if step.with_answer else ''}" \
               f" ({step.llm or 'no LLM'})"
        if step.done():
            rows.append((name, "done", "exact"))
            continue
        # listwise (a turn per passage) and AttR (all passages in one prompt): one prompt
        # per query; pointwise: one per candidate
        per_query = len(method.templates.get(source.kind, {})) > 1 or bool(method.operation)
        calls = 0 if not (method.templates or method.needs_answer) else \
            queries if per_query else candidates
        answers = queries if (step.with_answer or method.needs_answer) else 0
        asked = tokens(calls, config.k if per_query else 1) + tokens(answers, config.k)
        rows.append((name, f"{calls + answers:,} calls, ~{asked:,} tokens",
                     f"{bound}; pseudo-answers included"))
        if method.kind == "ranking" or step.with_answer:
            shown = min(config.k, 5) if method.kind == "ranking" else config.k
            rows.append((f"  score --rag ({step.llm or 'each LLM'})",
                         f"{queries:,} calls, ~{tokens(queries, shown):,} tokens",
                         f"{bound}: every candidate selected, a ranking's top 5"))
    for step in (s for s in mine if s.what == "compare"):
        readers = len(step.llms)
        calls = readers * readers * queries
        rows.append((f"{dataset}: compare mcp", "done" if step.done() else
                     f"{calls:,} calls, ~{tokens(calls, config.k):,} tokens",
                     f"{bound}; the call cache serves each LLM's own"))
    return rows
