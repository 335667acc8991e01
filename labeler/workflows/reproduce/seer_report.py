"""The report of `labeler reproduce seer-paper`: SEER's Table 1 read off the finished steps,
as `labeler score TRAINED --against REFERENCE --baseline BASE --rag --llm LLM` gives it (the
score runs here and writes nothing; the call cache serves a report written again): EM (F1 on
HotpotQA) and mean evidence tokens of Zero, Full, the base and the trained extractor, the
compression ratio (Full's tokens over the extractor's), and a paired t-test of trained against
base, beside the published numbers (`PUBLISHED`), in a new version folder
`<out>/report/seer-paper/<datasets>/<llm>/v<N>/`.
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict
from pathlib import Path

from labeler.llm.config import LLMConfig
from labeler.workflows.reproduce.seer_steps import UNSTATED, SeerPaperConfig, Step, splits
from labeler.workflows.reproduce.steps import markdown_table, tests_lines, write_version

#: the rows of Table 1 reported, each as `score --rag` names it (its submissions by file stem)
METHODS = {"Zero": "no evidence (closed-book)", "Full": "every top-k passage",
           "base": "the base extractor's greedy evidence",
           "trained": "the trained extractor's greedy evidence"}
#: SEER's Table 1 (EM; F1 on HotpotQA), its Zero, Full and SEER columns: dataset -> generator
#: -> method -> (score, Tok); SEER is the trained extractor's row
PUBLISHED = {
    "NQ": {"Llama2": {"Zero": (0.2695, 0), "Full": (0.4382, 804), "trained": (0.4549, 95)},
           "Flan-T5": {"Zero": (0.0934, 0), "Full": (0.4137, 732), "trained": (0.4322, 89)}},
    "TQA": {"Llama2": {"Zero": (0.4898, 0), "Full": (0.6571, 813), "trained": (0.6711, 133)},
            "Flan-T5": {"Zero": (0.2621, 0), "Full": (0.6320, 760), "trained": (0.6503, 121)}},
    "HotpotQA": {"Llama2": {"Zero": (0.5471, 0), "Full": (0.5826, 821),
                            "trained": (0.6040, 62)},
                 "Flan-T5": {"Zero": (0.5289, 0), "Full": (0.5702, 765),
                             "trained": (0.5615, 58)}},
}
#: the paper's compression over its six cells (§4.2: "reduced by a factor of 9.25")
PUBLISHED_COMPRESSION = 9.25
#: our dataset -> the paper's (nq-sample holds NQ-open questions)
PAPER_DATASET = {"nq": "NQ", "nq-sample": "NQ", "tq": "TQA", "hotpotqa": "HotpotQA"}


def results(config: SeerPaperConfig, llm: LLMConfig, plan: list[Step], *,
            cache_dir: str | Path | None = None) -> list[dict]:
    """A row per (dataset, method) with its score and tokens beside the paper's, per
    (dataset, extractor) compression ratio, and per dataset the paired t-test."""
    from labeler.scoring.score import score

    rows = []
    for dataset in config.datasets:
        output = {s.what: s.output for s in plan if s.dataset == dataset}
        report = score(output["trained"], output["reference"], baseline=output["base"],
                       rag=True, llm=llm, max_new_tokens=config.max_new_tokens,
                       cache_dir=cache_dir)
        qa = {row["method"]: row for row in report.qa["rows"]}
        metric, paper = report.qa["metric"], PUBLISHED.get(PAPER_DATASET.get(dataset), {})
        for method, shown in METHODS.items():
            rows.append({"dataset": dataset, "test_split": splits(dataset)[1],
                         "method": method, "evidence": shown, "metric": metric,
                         "score": qa[method][metric], "tokens": qa[method]["tokens"],
                         "queries": report.qa["queries"],
                         **{f"paper_{g}": paper[g].get(method) for g in ("Llama2", "Flan-T5")
                            if g in paper}})
        for method in ("base", "trained"):
            tokens = qa[method]["tokens"]
            rows.append({"dataset": dataset, "compression": method,
                         "ratio": qa["Full"]["tokens"] / tokens if tokens else None,
                         **{f"paper_{g}": _ratio(paper[g]) for g in ("Llama2", "Flan-T5")
                            if g in paper and method == "trained"}})
        test = report.tests[f"rag_{metric}"]
        rows.append({"dataset": dataset, "test": "trained vs base", "metric": f"rag_{metric}",
                     **test.as_dict()})
    return rows


def write_report(config: SeerPaperConfig, llm: LLMConfig, alias: str, plan: list[Step], *,
                 out: str | Path, cache_dir: str | Path | None = None
                 ) -> tuple[Path, list[dict]]:
    """Write the next report version (the tables, results.json, the figure, the card) in one
    rename; (its folder, its rows)."""
    rows = results(config, llm, plan, cache_dir=cache_dir)
    settings = {"config": {**asdict(config), "datasets": list(config.datasets)},
                "llm": alias, "unstated": UNSTATED,
                "published": "SEER's Table 1 (Zero, Full, SEER) and §4.2's 9.25",
                "steps": [str(s.output.relative_to(Path(out))) for s in plan]}
    parent = Path(out) / "report" / "seer-paper" / "+".join(config.datasets) / alias
    path = write_version(parent, {
        "results.json": json.dumps({**settings, "rows": rows}, indent=1, allow_nan=False),
        "table1.md": table1(rows), "compression.md": compression_table(rows),
        "table1.png": figure(rows), "README.md": card(config, alias)})
    return path, rows


def table1(rows: list[dict]) -> str:
    """Markdown: a row per (dataset, method), ours beside the paper's Llama2 and Flan-T5
    cells, then the paired t-tests."""
    header = ("dataset (test split)", "method", "metric", "ours", "Tok", "queries",
              "paper, Llama2", "Tok", "paper, Flan-T5", "Tok")
    lines = markdown_table(header, (
        (f"{r['dataset']} ({r['test_split']})", f"{r['method']}: {r['evidence']}", r["metric"],
         _float(r["score"]), _float(r["tokens"], 1), r["queries"],
         *(cell for g in ("Llama2", "Flan-T5") for cell in _paper(r.get(f"paper_{g}"))))
        for r in rows if "method" in r))
    note = "The paper's trained row is its SEER column; it reports no base extractor row (n/a)."
    return "\n".join(["## SEER's Table 1: QA with each evidence", "", *lines, "", note, "",
                      "## Paired t-test (two-sided)", "", *tests_lines(rows), ""])


def compression_table(rows: list[dict]) -> str:
    """Markdown: Full's tokens over each extractor's, beside the paper's."""
    lines = markdown_table(
        ("dataset", "extractor", "ours", "paper, Llama2", "paper, Flan-T5"),
        ((r["dataset"], r["compression"], *(_float(r.get(k), 2) for k in (
            "ratio", "paper_Llama2", "paper_Flan-T5"))) for r in rows if "compression" in r))
    return "\n".join(["## Compression: Full's tokens ÷ the evidence's", "", *lines, "",
                      f"The paper's over its six cells: {PUBLISHED_COMPRESSION}.", ""])


def figure(rows: list[dict]) -> bytes:
    """PNG: per dataset, the score and the tokens of each method, ours beside the paper's
    Llama2 cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    datasets = list(dict.fromkeys(r["dataset"] for r in rows if "method" in r))
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.5 * len(datasets), 6),
                             squeeze=False)
    at = np.arange(len(METHODS))
    for column, dataset in enumerate(datasets):
        mine = {r["method"]: r for r in rows if r.get("dataset") == dataset and "method" in r}
        for line, (value, name) in enumerate(((0, "score"), (1, "tokens"))):
            axis = axes[line][column]
            ours = [mine[m][name] or 0.0 for m in METHODS]
            paper = [(mine[m].get("paper_Llama2") or (np.nan, np.nan))[value] for m in METHODS]
            axis.bar(at - 0.2, ours, 0.4, label="ours")
            axis.bar(at + 0.2, paper, 0.4, label="paper (Llama2)")
            axis.set_xticks(at, list(METHODS), fontsize=8)
            metric = mine["Zero"]["metric"].upper()
            axis.set_title(f"{dataset}: {metric if name == 'score' else 'Tok'}", fontsize=9)
            axis.legend(fontsize=7)
    fig.suptitle("SEER's Table 1: ours beside the paper's (no base row in the paper)",
                 fontsize=9)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return png.getvalue()


def card(config: SeerPaperConfig, alias: str) -> str:
    """The report's README: what ran, with which settings, and every default SEER does not
    state."""
    train = config.train
    unstated = "\n".join(f"- {text}" for text in UNSTATED.values())
    return f"""# SEER's Table 1, reproduced by `labeler reproduce seer-paper`

Zhao et al., "SEER: Self-Aligned Evidence Extraction for Retrieval-Augmented Generation"
(EMNLP 2024). Generator and base extractor: `{alias}` (SEER's: Llama2-7B-Chat; its Table 1
also answers with Flan-T5-XL). Datasets: {', '.join(config.datasets)}; the pairs are built on
{', '.join(splits(d)[0] for d in config.datasets)} and Table 1 measured on
{', '.join(splits(d)[1] for d in config.datasets)}, retrieving from
{', '.join(f"{d}: {config.corpus_of(d) or 'its own passages'}" for d in config.datasets)}.

- Pairs: top {config.k} passages, {config.samples} samples a query (top_p 1, top_k 80,
  temperature 1), faithfulness `{config.faithfulness}`, smoothing CoV weights, λ-weighted
  pairs; {_limit(config.train_limit)} training queries.
- Training (SEER's Appendix A where it states it): Adam (0.9, 0.999, 1e-8), lr
  {train.learning_rate:g}, {train.warmup_ratio:.1%} warm-up, cosine schedule, batch
  {train.batch_size} × {train.gradient_accumulation}, {_length(train)},
  {'LoRA adapters, merged' if train.lora else 'every weight (not LoRA: not SEER)'}.
- Evaluation: greedy extraction and greedy answers; EM (F1 on HotpotQA) over
  {_limit(config.limit)} test queries; Tok in the generator's tokenizer.

Settings SEER does not state (ours):

{unstated}

Files: `table1.md` (Table 1 beside the paper's Llama2 and Flan-T5 cells, and the paired
t-test of trained against base), `compression.md`, `table1.png`, `results.json`. Numbers on
a sample, a few training steps or a small model say that the pipeline runs, not that SEER
holds.
"""


def _ratio(cells: dict) -> float:
    return cells["Full"][1] / cells["trained"][1]


def _limit(limit: int | None) -> str:
    return "every" if limit is None else f"the first {limit:,}"


def _length(train) -> str:
    return f"{train.max_steps} optimizer steps" if train.max_steps else f"{train.epochs:g} epochs"


def _paper(cell: tuple | None) -> tuple[str, str]:
    return ("n/a", "n/a") if cell is None else (f"{cell[0]:.4f}", str(cell[1]))


def _float(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"
