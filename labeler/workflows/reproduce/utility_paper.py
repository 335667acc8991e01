"""`labeler reproduce utility-paper`: the utility paper's experiments in one resumable run,
written as one `report` version (its Tables 2-6 and Figures 1-5, the paper's numbers beside).

The steps (`labeler.workflows.reproduce.utility_steps`): for each dataset, `labeler build` of the
utility labels on the pools the paper needs, every judge method with and without the
pseudo-answer, `labeler compare` over the LLMs' mcp labels; then the scores and the report
(`labeler.workflows.reproduce.utility_report`). A step whose output is complete is skipped; an
unfinished build resumes at its unfinished shards, and the call cache serves every answer
already asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from labeler.llm.config import LLMConfig
from labeler.workflows.reproduce.steps import Reproduced
from labeler.workflows.reproduce.utility_report import write_report
from labeler.workflows.reproduce.utility_steps import (
    ReproduceConfig,
    Step,
    aliases_of,
    steps,
    utility_folder,
    work_folder,
)


def reproduce(config: ReproduceConfig, llms: Sequence[LLMConfig], *, out: str | Path = "out",
              cache_dir: str | Path | None = None, shard_size: int | None = None,
              executor=None) -> Reproduced:
    """Run every step of `steps` not yet done, then write the report version under `out`
    (`<out>/report/<datasets>/<llms>/v<N>/`).

    Every build's checks run before any model is loaded (`check_build`), so a mistyped
    dataset or LLM fails before any work.
    """
    from labeler.workflows.build import check_build

    aliases = aliases_of(llms)
    plan = steps(config, aliases, out)
    todo = [s for s in plan if not s.done()]
    for dataset, pool, missing in _unbuilt(todo, llms, aliases):
        check_build("utility", config.utility(dataset, pool), missing,
                    out=work_folder(out) / pool, version="1")
    for step in todo:
        if step.what == "judge":
            config.judge(step.dataset, step.method, step.with_answer)  # its checks, now
    _run(config, llms, aliases, todo, out=out, cache_dir=cache_dir, shard_size=shard_size,
         executor=executor)
    path, records = write_report(config, aliases, plan, out=out, cache_dir=cache_dir,
                                 served=served_llms(llms, aliases))
    return Reproduced(path, records, todo, [s for s in plan if s not in todo])


def _unbuilt(todo: Sequence[Step], llms: Sequence[LLMConfig], aliases: Sequence[str]
             ) -> list[tuple[str, str, list[LLMConfig]]]:
    """(dataset, pool, the LLMs whose labels are not complete) of each unfinished build."""
    by_alias = dict(zip(aliases, llms))
    groups: dict[tuple[str, str], list[LLMConfig]] = {}
    for step in todo:
        if step.what == "build":
            groups.setdefault((step.dataset, step.pool), []).append(by_alias[step.llm])
    return [(dataset, pool, missing) for (dataset, pool), missing in groups.items()]


def _run(config: ReproduceConfig, llms: Sequence[LLMConfig], aliases: Sequence[str],
         todo: Sequence[Step], *, out, cache_dir, shard_size, executor) -> None:
    """The unfinished steps: the builds (all LLMs of a pool at once), the judges, the
    comparisons."""
    from labeler.workflows.build import build
    from labeler.workflows.compare import compare
    from labeler.workflows.judge import judge

    work = work_folder(out)
    sizes = {} if shard_size is None else {"shard_size": shard_size}
    for dataset, pool, missing in _unbuilt(todo, llms, aliases):
        build("utility", config.utility(dataset, pool), missing, out=work / pool, version="1",
              cache_dir=cache_dir, executor=executor, **sizes)
    by_alias = dict(zip(aliases, llms))
    for step in todo:
        if step.what == "judge":
            judge(config.judge(step.dataset, step.method, step.with_answer),
                  _judge_llm(step, by_alias.get(step.llm)), out=step.output,
                  cache_dir=cache_dir, **sizes)
        elif step.what == "compare":
            compare([utility_folder(work, "mcp", step.dataset, a) for a in step.llms],
                    out=work / "mcp", llms={a: by_alias[a].name for a in step.llms},
                    cache_dir=cache_dir, served=_settings(served_llms(llms, aliases)
                                                          .get(step.llms[0])))


def _judge_llm(step: Step, llm: LLMConfig | None) -> LLMConfig | None:
    """The LLM a judge step asks: a method that needs an operation only the hf backend answers
    (AttR's attention) runs on hf, whatever the other steps run on."""
    from labeler.judges.methods import METHODS
    from labeler.llm import answers

    operation = METHODS[step.method].operation
    if llm is None or operation is None or answers(llm.backend, operation):
        return llm
    return llm.on_hf()


def served_llms(llms: Sequence[LLMConfig], aliases: Sequence[str]) -> dict[str, LLMConfig]:
    """The LLMs that run on a server, by alias: a step that asks an artifact's own LLM (the
    compare's readers, the scores' RAG answers) is given it, since the server's URL and
    options are the command's and never in a manifest. Every LLM of a run runs alike."""
    return {a: llm for a, llm in zip(aliases, llms) if llm.backend == "openai"}


def _settings(llm: LLMConfig | None) -> dict | None:
    """`llm`'s settings but its name, for `compare`'s readers (None: as their manifests)."""
    return None if llm is None else {k: v for k, v in asdict(llm).items() if k != "name"}
