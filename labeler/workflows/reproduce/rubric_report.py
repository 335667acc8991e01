"""The report of `labeler reproduce rubric-experiment`: every arm's ranking read off the BM25
baseline's run and the two rubric builds of each dataset, scored with the experiment's NDCG@10
(`labeler.metrics.ranking.experiment_ndcg`, named `ndcg@10 (cheat_at_search)`) over every
sampled query and trec_eval's NDCG@10 over the queries with a relevant judgment (the builds'
own `ndcg@10_<method>`), paired t-tests between arms on both, as tables, `results.json` and one
figure, in a new version folder `<out>/report/rubric-experiment/<datasets>/<llm>/v<N>/`.

The blog (the seed) shows its results as images only: no published number is in the seed,
and every table says so rather than leaving the column out.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from labeler.artifacts.reader import read_tables
from labeler.formats import Run
from labeler.metrics.ranking import EXPERIMENT_NDCG, experiment_ndcg, rank_metrics
from labeler.metrics.significance import paired_t_test
from labeler.sources.product_search import ESCI_GRADES, WANDS_GRADES
from labeler.tasks.rubric import RubricTask
from labeler.workflows.reproduce.rubric_steps import RubricExperimentConfig, Step
from labeler.workflows.reproduce.steps import tests_lines, write_version

TREC_NDCG = "ndcg@10"
#: arm -> (the step it is read from, the build's method, what the table calls it); the BM25
#: baseline is its own run (title^9.3 text^4.1), every other arm a build on the decision arms'
#: run (title^9.4 text^4)
ARMS = {
    "bm25": ("bm25", "bm25", "BM25 baseline as it ran"),
    "direct": ("rubric", "single", "direct question alone"),
    "direct_fused": ("rubric", "single_fused", "direct question fused"),
    "bag": ("rubric", "rubric", "bag of questions summed"),
    "bag_fused": ("rubric", "fused", "bag of questions fused"),
    "threshold": ("threshold", "rubric", "bag, P(yes) > t only, summed"),
    "threshold_fused": ("threshold", "fused", "bag, P(yes) > t only, fused"),
}
#: the paired tests: (arm a, arm b), a against b
PAIRS = (*((arm, "bm25") for arm in ARMS if arm != "bm25"), ("bag", "direct"),
         ("bag_fused", "direct_fused"), ("threshold", "bag"), ("threshold_fused", "bag_fused"))
#: the experiment's one ideal is ten results of the dataset's top grade
TOP_GRADES = {"wands": max(WANDS_GRADES.values()), "esci": max(ESCI_GRADES.values())}
PUBLISHED = "not in the seed: the blog shows its results as images only"


def per_query(config: RubricExperimentConfig, dataset: str, folders: dict[str, Path]
              ) -> dict[str, dict[str, np.ndarray]]:
    """Each arm's per-query values of both metrics on `dataset`: the experiment's over every
    sampled query, trec_eval's over those with a relevant judgment (NaN elsewhere)."""
    runs, qrels = {"bm25": {"bm25": Run.from_file(folders.pop("bm25"))}}, {}
    for build, folder in folders.items():
        _, tables = read_tables(folder)
        task = RubricTask(config.rubric(dataset, None, threshold=build == "threshold"))
        records = task.labelled(tables)
        qrels = {r["qid"]: r["relevance"] for r in records}
        runs[build] = task.rankings(records)[1]
    qids = list(qrels)
    judged = [q for q in qids if any(v > 0 for v in qrels[q].values())]
    top = TOP_GRADES.get(dataset) or max([1, *(v for r in qrels.values() for v in r.values())])
    values = {}
    for arm, (build, method, _) in ARMS.items():
        run = runs[build][method]
        trec = dict(zip(judged, rank_metrics(run, qrels, ks=[10], qids=judged)["ndcg@10"]))
        values[arm] = {EXPERIMENT_NDCG: experiment_ndcg(run, qrels, max_grade=top, qids=qids),
                       TREC_NDCG: np.array([trec.get(q, np.nan) for q in qids])}
    return values


def results(config: RubricExperimentConfig, plan: list[Step]) -> list[dict]:
    """One row per (dataset, arm, metric) with its mean and queries, and per paired test."""
    rows = []
    for dataset in config.datasets:
        folders = {s.what: s.output for s in plan
                   if s.dataset == dataset and s.what != "bm25_boosted"}
        values = per_query(config, dataset, folders)
        for metric in (EXPERIMENT_NDCG, TREC_NDCG):
            for arm, (build, method, name) in ARMS.items():
                known = values[arm][metric][~np.isnan(values[arm][metric])]
                rows.append({"dataset": dataset, "metric": metric, "arm": arm, "name": name,
                             "mean": float(known.mean()) if known.size else None,
                             "queries": int(known.size), "published": None,
                             "source": f"the {build} run" if build == "bm25"
                             else f"the {build} build's {method} ranking"})
            for a, b in PAIRS:
                test = paired_t_test(values[a][metric], values[b][metric])
                rows.append({"dataset": dataset, "metric": metric, "test": f"{a} vs {b}",
                             **test.as_dict()})
    return rows


def write_report(config: RubricExperimentConfig, alias: str, plan: list[Step], *,
                 out: str | Path) -> tuple[Path, list[dict]]:
    """Write the next report version (tables, results.json, the figure) in one rename;
    (its folder, its rows)."""
    rows = results(config, plan)
    settings = {"config": config.__dict__ | {"datasets": list(config.datasets)},
                "llm": alias, "published": PUBLISHED,
                "steps": [str(s.output.relative_to(Path(out))) for s in plan]}
    parent = Path(out) / "report" / "rubric-experiment" / "+".join(config.datasets) / alias
    path = write_version(parent, {
        "results.json": json.dumps({**settings, "rows": rows}, indent=1, allow_nan=False),
        "ndcg.md": means_table(rows), "tests.md": tests_table(rows),
        "ndcg.png": figure(rows, config.datasets)})
    return path, rows


def means_table(rows: list[dict]) -> str:
    """Markdown: a row per (dataset, arm), both metrics, and the blog's number column."""
    lines = [f"| dataset | arm | {EXPERIMENT_NDCG} | {TREC_NDCG} (trec_eval) | blog |",
             "|---|---|---|---|---|"]
    means = {(r["dataset"], r["arm"], r["metric"]): r for r in rows if "arm" in r}
    for (dataset, arm, metric), row in means.items():
        if metric == EXPERIMENT_NDCG:
            trec = means[dataset, arm, TREC_NDCG]
            lines.append(f"| {dataset} | {row['name']} | {_number(row)} | {_number(trec)} | "
                         "n/a |")
    return "\n".join(["## NDCG@10 of each arm", "", *lines, "",
                      f"blog: {PUBLISHED}.", ""])


def tests_table(rows: list[dict]) -> str:
    """Markdown: each paired t-test, on both metrics."""
    return "\n".join(["## Paired t-tests between arms (two-sided)", "", *tests_lines(rows), ""])


def figure(rows: list[dict], datasets: tuple[str, ...]) -> bytes:
    """PNG: a panel per metric, a group of bars per arm, a bar per dataset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), squeeze=False)
    for axis, metric in zip(axes[0], (EXPERIMENT_NDCG, TREC_NDCG)):
        width = 0.8 / len(datasets)
        for i, dataset in enumerate(datasets):
            means = [next(r["mean"] for r in rows if r.get("arm") == arm
                          and r["dataset"] == dataset and r["metric"] == metric) or 0.0
                     for arm in ARMS]
            axis.bar(np.arange(len(ARMS)) + i * width, means, width, label=dataset)
        axis.set_xticks(np.arange(len(ARMS)) + 0.4 - width / 2, list(ARMS), rotation=30,
                        ha="right", fontsize=8)
        axis.set_title(metric, fontsize=9)
        axis.legend(fontsize=8)
    fig.suptitle("Bag-of-decisions experiment: NDCG@10 per arm (blog's numbers: not in the "
                 "seed)", fontsize=9)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return png.getvalue()


def _number(row: dict) -> str:
    return "n/a" if row["mean"] is None else f"{row['mean']:.4f} ({row['queries']} q)"
