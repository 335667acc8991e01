"""Fig. 5 of the utility paper (Zhang et al., §4.3, "Perplexity highlights LLM-specific
comprehension gaps"): the LLM's perplexity on the human gold passages it found gold
utilitarian (HGP ∩ GUP) and on those it did not (HGP \\ GUP), on the passage alone and on the
query with the passage.

The paper's code does not hold this analysis, so it follows the text: a candidate of a utility
artifact is in HGP when its `gold` flag is set (a human gold passage, whichever pool brought
it), in GUP when its `utility` is 1. A text's perplexity is exp(-(1/N) Σ log P(t_i | t_<i)) over
its N tokens, read as plain text after the model's BOS token (`Backend.loglikelihood_rolling`);
the passage is "{title} {text}", the query with it "{question}\\n{title} {text}". A group's
value is the mean of its passages' perplexities, one per (query, gold passage).

    from labeler.workflows.perplexity import perplexity
    result = perplexity(["out/utility/nq/llama3.1-8b/v1", "out/utility/nq/qwen3-8b/v1"])
    result.table    # polars: dataset, llm, group, passages, ppl_passage, ppl_query_passage
    result.figure   # the PNG's bytes: per dataset and text, bars per LLM and group
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from labeler.artifacts.reader import load_artifact
from labeler.errors import InputError
from labeler.llm.calls import Calls
from labeler.paths import atomic_file
from labeler.scoring.rag import reader_config
from labeler.tasks.utility import UtilityTask

#: the two groups of human gold passages, as Fig. 5 names them
GROUPS = ("HGP ∩ GUP", "HGP \\ GUP")
#: the two texts whose perplexity is read: column -> what the figure calls it
TEXTS = {"ppl_passage": "passage", "ppl_query_passage": "query + passage"}


@dataclass
class Perplexities:
    """Fig. 5's numbers and figure."""

    table: pl.DataFrame  # one row per (dataset, llm, group); a perplexity is null without passages
    figure: bytes  # PNG: one panel per dataset and text, a pair of bars per LLM

    def save(self, folder: str | Path) -> list[Path]:
        """Write `perplexity.png` and `perplexity.csv` into `folder`, each atomically."""
        png, csv = Path(folder) / "perplexity.png", Path(folder) / "perplexity.csv"
        with atomic_file(png, "wb") as f:
            f.write(self.figure)
        with atomic_file(csv) as f:
            f.write(self.table.write_csv())
        return [png, csv]


def perplexity(artifacts: Sequence[str | Path], *, llms: Mapping[str, str] | None = None,
               cache_dir: str | Path | None = None) -> Perplexities:
    """Fig. 5 for utility `artifacts` (version folders; one LLM's labels of one dataset each),
    each read by the LLM that labelled it (`llms` maps an artifact's LLM alias to another model
    to load instead) on the hf backend, whatever backend built the artifact (only hf scores
    plain text), through the call cache. Every artifact and LLM is checked before any model
    loads; the LLMs run one after another."""
    loaded = [load_artifact(path) for path in artifacts]
    for path, artifact in zip(artifacts, loaded):
        if (artifact.manifest or {}).get("artifact") != UtilityTask.name:
            raise InputError("expected a utility artifact's version folder", path=str(path))
    llms = dict(llms or {})
    readers = [reader_config(a.manifest, llms.get(a.manifest["llm"])).on_hf() for a in loaded]
    rows = []
    for artifact, reader in zip(loaded, readers):
        llm = Calls(reader.load(cache_dir))
        rows += _rows(llm, artifact.manifest["dataset"], artifact.manifest["llm"],
                      artifact.records)
    table = pl.DataFrame(rows, schema={"dataset": pl.String, "llm": pl.String,
                                       "group": pl.String, "passages": pl.Int64,
                                       "ppl_passage": pl.Float64,
                                       "ppl_query_passage": pl.Float64})
    return Perplexities(table, figure(table))


def text_perplexity(llm: Calls, texts: list[str], what: str) -> list[float]:
    """exp(-mean token log-probability) of each plain text, its tokens as the LLM counts them
    (`count_tokens`); every text must hold a token."""
    logprobs = llm.loglikelihood_rolling(texts, what, [f"text {i + 1}" for i in range(len(texts))])
    counts = llm.backend.count_tokens(texts)
    return [math.exp(-lp / n) for lp, n in zip(logprobs, counts)]


def _rows(llm: Calls, dataset: str, alias: str, records: list[dict]) -> list[dict]:
    """The two groups' rows of one artifact."""
    gold = [(r["question"], c) for r in records for c in r["candidates"] if c["gold"]]
    passages = [f"{c['title']} {c['text']}" if c["title"] else c["text"] for _, c in gold]
    alone = text_perplexity(llm, passages, "perplexity: passages")
    joint = text_perplexity(llm, [f"{q}\n{p}" for (q, _), p in zip(gold, passages)],
                            "perplexity: query + passage")
    rows = []
    for group, utility in zip(GROUPS, (1, 0)):
        chosen = [i for i, (_, c) in enumerate(gold) if c["utility"] == utility]
        rows.append({"dataset": dataset, "llm": alias, "group": group, "passages": len(chosen),
                     "ppl_passage": _mean([alone[i] for i in chosen]),
                     "ppl_query_passage": _mean([joint[i] for i in chosen])})
    return rows


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def figure(table: pl.DataFrame) -> bytes:
    """Fig. 5's layout: per dataset, a panel for the passage and one for query + passage; in
    each, a pair of bars per LLM (HGP ∩ GUP, HGP \\ GUP), the value above each bar."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    datasets = table["dataset"].unique(maintain_order=True).to_list()
    figure_, axes = plt.subplots(len(datasets), len(TEXTS), squeeze=False,
                                 figsize=(4.2 * len(TEXTS), 3.2 * len(datasets)))
    for row, dataset in enumerate(datasets):
        part = table.filter(pl.col("dataset") == dataset)
        llms = part["llm"].unique(maintain_order=True).to_list()
        for col, (column, name) in enumerate(TEXTS.items()):
            ax = axes[row][col]
            for g, group in enumerate(GROUPS):
                values = [part.filter((pl.col("llm") == llm) & (pl.col("group") == group))
                          [column].item() for llm in llms]
                where = [k + (g - 0.5) * 0.38 for k in range(len(llms))]
                bars = ax.bar(where, [0.0 if v is None else v for v in values], 0.38,
                              label=group)  # no passages: no bar, "n/a" on the axis
                ax.bar_label(bars, labels=["n/a" if v is None else f"{v:.1f}" for v in values],
                             fontsize=7)
            ax.set_xticks(range(len(llms)), llms, rotation=20, ha="right")
            ax.set_xlim(-0.6, len(llms) - 0.4)
            ax.set_ylabel("perplexity")
            ax.set_title(f"{dataset}: {name}", fontsize=9)
            ax.legend(fontsize=7)
    figure_.tight_layout()
    png = io.BytesIO()
    figure_.savefig(png, format="png", dpi=120, metadata={"Software": None})
    plt.close(figure_)
    return png.getvalue()
