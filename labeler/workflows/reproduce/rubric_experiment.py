"""`labeler reproduce rubric-experiment`: the bag-of-decisions experiment (Turnbull's blog;
its metric and sampling from softwaredoug/cheat-at-search) on WANDS and ESCI in one resumable
run, written as one report version (`labeler.workflows.reproduce.rubric_report`).

The steps (`labeler.workflows.reproduce.rubric_steps`): per dataset, the BM25 runs of the
seeded query sample as the experiment's BM25 baseline and its decision arms ran, then the
rubric build (bag and direct arms) and its threshold variant on the decision arms' run. A finished step is skipped; an unfinished build resumes at its unfinished
shards, and the call cache serves every call already asked (the threshold build asks none the
first did not).
"""

from __future__ import annotations

from pathlib import Path

from labeler.llm.config import LLMConfig
from labeler.sources.search_experiments import ARMS
from labeler.workflows.reproduce.rubric_report import ARMS as REPORT_ARMS
from labeler.workflows.reproduce.rubric_report import write_report
from labeler.workflows.reproduce.rubric_steps import (
    RUNS,
    RubricExperimentConfig,
    Step,
    steps,
    work_folder,
)
from labeler.workflows.reproduce.steps import Reproduced
from labeler.workflows.reproduce.utility_steps import aliases_of

Row = tuple[str, str, str]


def reproduce_rubric(config: RubricExperimentConfig, llm: LLMConfig, *, out: str | Path = "out",
                     cache_dir: str | Path | None = None, shard_size: int | None = None,
                     executor=None) -> Reproduced:
    """Run every step not yet done, then write the report version. The BM25 runs (no model)
    come first, then every build's checks (`check_build`), before any model is loaded."""
    from labeler.workflows.build import build, check_build

    [alias] = aliases_of([llm])
    plan = steps(config, alias, out)
    todo = [s for s in plan if not s.done()]
    for step in todo:
        if step.what in RUNS:
            write_bm25_run(config, step, cache_dir=cache_dir)
    builds = [s for s in todo if s.what not in RUNS]
    for step in builds:
        check_build("rubric", _build_config(config, step), [llm], out=step.root, version="1")
    sizes = {} if shard_size is None else {"shard_size": shard_size}
    for step in builds:
        build("rubric", _build_config(config, step), [llm], out=step.root, version="1",
              cache_dir=cache_dir, executor=executor, **sizes)
    path, rows = write_report(config, alias, plan, out=out)
    return Reproduced(path, rows, todo, [s for s in plan if s not in todo])


def write_bm25_run(config: RubricExperimentConfig, step: Step, *,
                   cache_dir: str | Path | None = None) -> Path:
    """The sampled queries' BM25 top K as the experiment ran it for the step's arm (its
    fields and boosts from `ARMS`; zero-score products kept), written atomically as a TREC
    run."""
    from labeler.retrieval.bm25 import BM25, bm25_run
    from labeler.workflows.steps import config_source

    source = config_source(config.rubric(step.dataset, None))
    fields = ARMS[RUNS[step.what][1]].fields
    run = bm25_run(source.corpus, source.queries, k=config.rerank_k,
                   bm25=BM25.of(source.bm25, fields=fields), cache_dir=cache_dir, zeros=True)
    return run.save(step.output, tag=f"{step.what}-as-ran")


def plan_rows(config: RubricExperimentConfig, llm: LLMConfig, *, out: str | Path = "out"
              ) -> list[Row]:
    """(step, count, how known) rows of everything `reproduce_rubric` would do; no model is
    loaded and nothing is written. A build's calls are bounded from the settings: a question
    list per query (and one retry), a P(yes) per reranked product and question, the direct
    question's included."""
    [alias] = aliases_of([llm])
    rows = []
    queries, k = config.queries, config.rerank_k
    for step in steps(config, alias, out):
        name = f"{step.dataset}: {_NAMES[step.what]}"
        if step.done():
            rows.append((name, "done", "exact"))
        elif step.what in RUNS:
            rows.append((name, f"{queries:,} queries × top {k}", "exact"))
        elif step.what == "rubric":
            calls = 2 * queries + queries * k * (config.max_questions + 1)
            how = f"upper bound: a retry per query, {config.max_questions} questions kept"
            rows.append((name, f"{calls:,} calls", how))
        else:
            rows.append((name, "0 new calls", "the call cache serves the rubric build's"))
    rows.append(("report", f"{len(config.datasets)} datasets × {len(REPORT_ARMS)} arms × 2 metrics",
                 f"under {work_folder(out).parent / 'report'}"))
    rows.append(("LLM", alias, "none loaded by a dry run"))
    return rows


_NAMES = {"bm25": "BM25 baseline run, title^9.3 text^4.1 (zero-score products kept)",
          "bm25_boosted": "decision arms' BM25 run, title^9.4 text^4 (zero-score products kept)",
          "rubric": "build rubric (bag of questions and the direct question)",
          "threshold": "build rubric, threshold variant"}


def _build_config(config: RubricExperimentConfig, step: Step):
    """The rubric build's config of a build step, over its dataset's BM25 run."""
    run = step.root.parent / RUNS["bm25_boosted"][0]  # <work>/<dataset>/bm25_boosted.trec
    return config.rubric(step.dataset, run, threshold=step.what == "threshold")
