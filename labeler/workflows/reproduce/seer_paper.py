"""`labeler reproduce seer-paper`: SEER's Table 1 (Zhao et al., EMNLP 2024) in one resumable
run, written as one report version (`labeler.workflows.reproduce.seer_report`).

The steps (`labeler.workflows.reproduce.seer_steps`): per dataset, the pairs on its training
split, the trained extractor, the test split's reference build, and the base and trained
extractors' greedy evidence. A finished step is skipped; an unfinished build resumes at its
unfinished shards, and the call cache serves every call already asked.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from labeler.errors import InputError
from labeler.llm.base import Sampling
from labeler.llm.config import LLMConfig
from labeler.workflows.reproduce.seer_report import write_report
from labeler.workflows.reproduce.seer_steps import SeerPaperConfig, Step, steps, work_folder
from labeler.workflows.reproduce.steps import Reproduced
from labeler.workflows.reproduce.utility_steps import aliases_of

Row = tuple[str, str, str]


def reproduce_seer(config: SeerPaperConfig, llm: LLMConfig, *, out: str | Path = "out",
                   cache_dir: str | Path | None = None, shard_size: int | None = None,
                   executor=None) -> Reproduced:
    """Run every step not yet done, then write the report version. SEER's faithfulness
    checkpoint and every build's checks (`check_build`) come first, before any model loads."""
    from labeler.workflows.build import build, check_build

    [alias] = aliases_of([llm])
    plan = steps(config, alias, out)
    todo = [s for s in plan if not s.done()]
    if any(s.what in ("pairs", "reference") for s in todo):
        check_faithfulness(config.faithfulness)
    for step in todo:
        if step.what in ("pairs", "reference"):
            check_build("seer", _build_config(config, step), [llm], out=step.root, version="1")
    sizes = {} if shard_size is None else {"shard_size": shard_size}
    for step in todo:
        if step.what in ("pairs", "reference"):
            build("seer", _build_config(config, step), [llm], out=step.root, version="1",
                  cache_dir=cache_dir, executor=executor, **sizes)
        elif step.what == "extractor":
            from labeler.train.extractor import train_extractor

            pairs = next(s for s in plan if s.dataset == step.dataset and s.what == "pairs")
            train_extractor(pairs.output, out=step.output, config=config.train,
                            cache_dir=cache_dir)
        else:
            reference = next(s for s in plan if s.dataset == step.dataset
                             and s.what == "reference")
            extract_evidence(reference.output, extractor_llm(config, llm, step, plan),
                             step.output, max_new_tokens=config.max_new_tokens,
                             cache_dir=cache_dir)
    path, rows = write_report(config, llm, alias, plan, out=out, cache_dir=cache_dir)
    return Reproduced(path, rows, todo, [s for s in plan if s not in todo])


def check_faithfulness(spec: str) -> None:
    """InputError, in one line, when SEER's AlignScore checkpoint cannot be had: a local one
    that is not there, or, offline, one the Hub cache does not hold. Nothing is loaded."""
    from labeler.metrics.seer.alignscore import checkpoint_available
    from labeler.metrics.seer.faithfulness import faithfulness_spec

    kind, argument = faithfulness_spec(spec)
    if kind == "alignscore" and (why := checkpoint_available(argument)):
        raise InputError(f"SEER's AlignScore checkpoint cannot be had: {why}",
                         field_name="faithfulness",
                         hint="use --faithfulness llm (the generator as judge), or give a "
                              "local checkpoint: --faithfulness alignscore:PATH")


def extractor_llm(config: SeerPaperConfig, llm: LLMConfig, step: Step, plan: list[Step]
                  ) -> LLMConfig:
    """The extractor of an evidence step, run as `llm` runs: the base one (SEER's: the
    generator), or the trained model folder (on hf where `llm` is served: the server does
    not serve the model just trained here)."""
    if step.what == "base":
        return replace(llm, name=config.extractor or llm.name)
    trained = next(s for s in plan if s.dataset == step.dataset and s.what == "extractor")
    extractor = replace(llm, name=str(trained.output))
    return extractor.on_hf() if llm.backend == "openai" else extractor


def extract_evidence(reference: Path, extractor: LLMConfig, target: Path, *,
                     max_new_tokens: int, cache_dir: str | Path | None = None) -> Path:
    """Each query of the seer artifact `reference` with its passages: the extractor's greedy
    extraction (SEER's §4.1), written to `target` as a `{qid, evidence}` submission in one
    rename; a query without passages gets blank evidence (answered closed-book)."""
    import json

    from labeler.artifacts.reader import load_artifact
    from labeler.llm.calls import Calls
    from labeler.paths import atomic_file
    from labeler.sources.passage import Passage
    from labeler.tasks.seer import extraction_prompt

    records = [r for r in load_artifact(reference).records if r["candidates"]]
    calls = Calls(extractor.load(cache_dir))
    prompts = [extraction_prompt(r["question"], [Passage(c["pid"], c["title"], c["text"])
                                                 for c in r["candidates"]]) for r in records]
    outputs = calls.generate(prompts, Sampling(max_tokens=max_new_tokens),
                             "greedy extractions", [r["qid"] for r in records])
    evidence = {r["qid"]: out[0].text.strip() for r, out in zip(records, outputs)}
    with atomic_file(target) as f:
        for record in load_artifact(reference).records:
            f.write(json.dumps({"qid": record["qid"],
                                "evidence": evidence.get(record["qid"], "")},
                               ensure_ascii=False) + "\n")
    return target


def plan_rows(config: SeerPaperConfig, llm: LLMConfig, *, out: str | Path = "out") -> list[Row]:
    """(step, count, how known) rows of everything `reproduce_seer` would do; no model is
    loaded and nothing is written (the builds' own plans are `labeler build --dry-run`'s)."""
    [alias] = aliases_of([llm])
    check_faithfulness(config.faithfulness)
    train = config.train
    rows = []
    for step in steps(config, alias, out):
        name = f"{step.dataset}: {_NAMES[step.what]}"
        if step.done():
            rows.append((name, "done", "exact"))
        elif step.what == "pairs":
            settings = config.pairs(step.dataset)
            count = (f"{settings.dataset}, {split_queries(settings.dataset, config.train_limit)}"
                     f" × {config.samples} samples, top {config.k} of {_corpus(settings)}")
            rows.append((name, count, f"faithfulness {config.faithfulness}"))
        elif step.what == "extractor":
            how = f"{train.max_steps} steps" if train.max_steps else f"{train.epochs:g} epochs"
            how_trained = (f"{'LoRA' if train.lora else 'every weight'}, lr "
                         f"{train.learning_rate:g}, β {train.beta:g}, batch "
                         f"{train.batch_size} × {train.gradient_accumulation}")
            rows.append((name, how, how_trained))
        elif step.what == "reference":
            settings = config.reference(step.dataset)
            count = (f"{settings.dataset}, {split_queries(settings.dataset, config.limit)} × 1 "
                     f"sample, top {config.k} of {_corpus(settings)}")
            rows.append((name, count, "Table 1's queries"))
        else:
            test = config.reference(step.dataset).dataset
            rows.append((name, f"greedy extractions of {split_queries(test, config.limit)}",
                         "one a query with passages"))
    rows.append(("report", f"{len(config.datasets)} datasets × Zero, Full, base, trained",
                 f"under {work_folder(out).parent / 'report' / 'seer-paper'}"))
    rows.append(("LLM", alias, "none loaded by a dry run"))
    return rows


_NAMES = {"pairs": "build seer pairs (training split)",
          "extractor": "train-extractor on the pairs",
          "reference": "build seer reference (test split)",
          "base": "evidence by the base extractor",
          "trained": "evidence by the trained extractor"}


def _queries(limit: int | None) -> str:
    return "every query" if limit is None else f"{limit:,} queries"


def split_queries(split: str, limit: int | None) -> str:
    """How many queries of `split` a step labels: `limit`, else the rows its pinned Hub file
    holds where known (`HubFiles.rows`; "at most" where the source leaves some out), else
    every query."""
    from labeler.sources.hub_files import HUB_FILES

    spec = HUB_FILES.get(split)
    if limit is not None or spec is None or spec.rows is None:
        return _queries(limit)
    return f"{'at most ' if spec.filters else ''}{spec.rows:,} queries"


def _corpus(settings) -> str:
    """The corpus a build of `settings` retrieves from, as a plan row names it."""
    from labeler.sources.registry import DEFAULT_CORPORA

    return settings.corpus or DEFAULT_CORPORA.get(settings.dataset) or "its own passages"


def _build_config(config: SeerPaperConfig, step: Step):
    return config.pairs(step.dataset) if step.what == "pairs" else config.reference(step.dataset)
