"""The report of `labeler reproduce utility-paper`: every number of the paper's tables and
figures read off the finished steps (`labeler.workflows.reproduce.utility_cells`), written as one
`report` version folder (`labeler.report.kind.PaperReport`).

The score steps run here, as `labeler score` would: they write nothing, and the call cache
serves the RAG answers of a report written again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from labeler.artifacts.reader import load_artifact
from labeler.artifacts.writer import write_artifact
from labeler.judges.methods import METHODS
from labeler.llm.config import LLMConfig
from labeler.progress import track
from labeler.report.kind import PaperReport
from labeler.workflows.reproduce import utility_cells as cells
from labeler.workflows.reproduce.utility_steps import (
    NQ,
    ReproduceConfig,
    Step,
    utility_folder,
    work_folder,
)

#: the order of the paper's rows within a table
ROW_ORDER = ("utilitarian_count", "no_passage", "all", "utilitarian", "retrieval", "attention",
             "likelihood", "pvs", "lvs", "lvr")


def write_report(config: ReproduceConfig, aliases: Sequence[str], plan: Sequence[Step], *,
                 out: str | Path, cache_dir: str | Path | None = None,
                 served: Mapping[str, LLMConfig] | None = None) -> tuple[Path, list[dict]]:
    """Collect every number from the steps of `plan` (all done) and write the report
    version; (its folder, its records). The RAG answers are the labels' own LLM's, asked
    as their manifest says, or as `served` says for an LLM on a server (by alias)."""
    work = work_folder(out)
    records: list[dict] = []
    reports: dict[tuple, list] = {}  # (LLM, method, with answer) -> each dataset's report
    for dataset in config.datasets:
        for alias in aliases:
            records += _labels(config, work, dataset, alias)
            judged = [s for s in plan if s.what == "judge" and s.dataset == dataset
                      and s.llm in (alias, None)]
            records += _scores(work, dataset, alias, judged, cache_dir, reports,
                               (served or {}).get(alias))
        for step in plan:
            if step.what == "compare" and step.dataset == dataset:
                stats = load_artifact(step.output).manifest["stats"]
                records += cells.compare_cells(dataset, stats, _rel(step.output, work),
                                               nq=dataset in NQ)
    records += _overall(reports)
    records += _perplexity(config, aliases, work, cache_dir)
    records.sort(key=lambda r: ROW_ORDER.index(r["method"]) if r["method"] in ROW_ORDER
                 else len(ROW_ORDER))
    path = write_artifact(records, out=out, kind=PaperReport,
                          dataset="+".join(config.datasets), llm="+".join(aliases),
                          manifest=_manifest(config, aliases, plan, work))
    return path, records


def _labels(config: ReproduceConfig, work: Path, dataset: str, alias: str) -> list[dict]:
    """Tables 2, 3, Figure 1a from each pool's labels; Table 6's all-candidates row and
    Figure 4 from the rp labels' records."""
    out = []
    for pool in config.pools(dataset):
        folder = utility_folder(work, pool, dataset, alias)
        artifact = load_artifact(folder)
        out += cells.utility_cells(alias, dataset, pool, artifact.manifest["stats"],
                                   _rel(folder, work))
        if pool == "rp":
            out += cells.artifact_splits(alias, dataset, artifact.records, config.k,
                                         _rel(folder, work))
    return out


def _scores(work: Path, dataset: str, alias: str, judged: Sequence[Step],
            cache_dir: str | Path | None, reports: dict[tuple, list],
            served: LLMConfig | None) -> list[dict]:
    """Tables 4, 5 and 6: each submission scored against the LLM's rp labels, as `labeler
    score` does, with --rag for the selections with the pseudo-answer and every ranking (its
    top 5; answered by `served` where the LLM is on a server); each report also kept in
    `reports` for the Overall rows."""
    from labeler.scoring.reference import load_reference
    from labeler.scoring.score import score

    folder = utility_folder(work, "rp", dataset, alias)
    reference = load_reference(folder)
    out = []
    for step in track(judged, f"{dataset}, {alias}: scores"):
        method = METHODS[step.method]
        rag = method.kind == "ranking" or step.with_answer
        report = score(step.output, reference, ks=(5,), rag=rag, cache_dir=cache_dir,
                       llm=served if rag else None)
        answer = step.with_answer if method.with_answer is not None else None
        reports.setdefault((alias, step.method, answer), []).append(report)
        out += cells.score_cells(alias, dataset, step.method, answer, report,
                                 _rel(step.output, work))
    return out


def _overall(reports: dict[tuple, list]) -> list[dict]:
    """Tables 4-6's Overall rows: each (LLM, method, answer)'s reports over the datasets,
    their queries pooled (`labeler.scoring.overall`), where there are several datasets."""
    from labeler.scoring.overall import overall

    return [cell for (alias, method, answer), each in reports.items() if len(each) > 1
            for cell in cells.score_cells(alias, "overall", method, answer, overall(each),
                                          f"overall of {len(each)} datasets")]


def _perplexity(config: ReproduceConfig, aliases: Sequence[str], work: Path,
                cache_dir: str | Path | None) -> list[dict]:
    """Figure 5: each LLM's perplexity on its hgp labels' human gold passages (on hf)."""
    from labeler.workflows.perplexity import perplexity

    folders = {(d, a): utility_folder(work, "hgp", d, a) for d in config.datasets
               if "hgp" in config.pools(d) for a in aliases}
    if not folders:
        return []
    table = perplexity(list(folders.values()), cache_dir=cache_dir).table
    return cells.perplexity_cells(table, {key: _rel(f, work) for key, f in folders.items()})


def _manifest(config: ReproduceConfig, aliases: Sequence[str], plan: Sequence[Step],
              work: Path) -> dict:
    """The report's manifest keys: what its labels share, the run's settings and steps."""
    labels = [load_artifact(utility_folder(work, "rp", d, a)).manifest
              for d in config.datasets for a in aliases]
    first = labels[0]
    sources = list(dict.fromkeys(m["source_dataset"] for m in labels))
    licences = {m.get("license") for m in labels}
    return {
        "model_id": " + ".join(dict.fromkeys(m["model_id"] for m in labels)),
        "model_revision": None,
        "source_dataset": " + ".join(sources),
        "source_revision": first["source_revision"] if len(sources) == 1 else None,
        "source_repos": list(dict.fromkeys(r for m in labels for r in m.get("source_repos", []))),
        "language": first.get("language"),
        "license": licences.pop() if len(licences) == 1 else "other",
        "prompt_templates": first["prompt_templates"],
        "sampling": {f"{m['dataset']}/{m['llm']}": m["sampling"] for m in labels},
        "seed": None,
        "datasets": list(config.datasets),
        "llms": list(aliases),
        "config": asdict(config),
        "paper_numbers": "labeler/data/utility_paper.csv",
        "steps": [{"what": _what(s), "output": _rel(s.output, work)} for s in plan],
    }


def _what(step: Step) -> str:
    if step.what == "judge":
        return f"judge {step.method}{' with answer' if step.with_answer else ''} " \
               f"({step.dataset}, {step.llm or 'no LLM'})"
    return f"{step.what} {step.dataset} {step.pool}" + (f" {step.llm}" if step.llm else "")


def _rel(path: Path, work: Path) -> str:
    return str(path.relative_to(work))
