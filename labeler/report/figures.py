"""The paper's Figures 1-5 as PNG files, drawn from their `report` records alone: one panel
per dataset, titles wrapped rather than cut, and a colour scale spanning the cells' own values
(in the unit the cells print).

- heatmaps (Figures 1b, 2, 3): a row per LLM (`llm`), a column per `column`;
- bars (Figures 1a, 4, 5): a group per LLM, a bar per `column` (one bar where there is none).
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Iterable

from labeler.report.heatmap import draw_cells

#: figure item -> (caption, "heatmap" | "bars")
FIGURES = {
    "figure-1a": (("Figure 1a. RAG accuracy (%) of each LLM with the same top-k retrieved "
                  "passages (rp)"), "bars"),
    "figure-1b": (("Figure 1b. RAG accuracy (%) of the reader (row) with the gold utilitarian "
                  "passages of each LLM (column), candidates mcp, NQ"), "heatmap"),
    "figure-2": (("Figure 2. Overlap of gold utilitarian passages (mcp) between LLMs and with "
                 "the human gold passages"), "heatmap"),
    "figure-3": (("Figure 3. RAG accuracy (%) of the reader (row) with the gold utilitarian "
                 "passages of each LLM (column), candidates mcp"), "heatmap"),
    "figure-4": (("Figure 4. RAG accuracy (%) with the human gold passages on unknown and "
                 "known queries"), "bars"),
    "figure-5": (("Figure 5. Perplexity of the human gold passages in and out of the LLM's gold "
                 "utilitarian set"), "bars"),
}


def render_figure(item: str, records: Iterable[dict]) -> bytes:
    """The PNG bytes of figure `item` from its records; a figure without records says so
    (the analysis it needs was not run)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    title, style = FIGURES[item]
    records = list(records)
    panels = list(dict.fromkeys(r["dataset"] for r in records)) or [None]
    width = 1.5 + 4.2 * len(panels)
    figure, axes = plt.subplots(1, len(panels), squeeze=False, figsize=(width, 4.2))
    for axis, dataset in zip(axes[0], panels):
        mine = [r for r in records if r["dataset"] == dataset]
        if not mine:
            axis.axis("off")
            axis.text(0.5, 0.5, "not computed in this report", ha="center", va="center")
        elif style == "heatmap":
            _heatmap(figure, axis, mine)
        else:
            _bars(axis, mine)
        axis.set_title(dataset or "", fontsize=9)
    # about 11 characters an inch at 9 points: the caption wraps inside the figure
    figure.suptitle("\n".join(textwrap.wrap(title, int(11 * width))), fontsize=9)
    figure.tight_layout()
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=110, metadata={"Software": None})
    plt.close(figure)
    return png.getvalue()


def _heatmap(figure, axis, records: list[dict]) -> None:
    """LLM x column cells, the colour scale from the smallest to the largest value shown."""
    import numpy as np

    rows = list(dict.fromkeys(r["llm"] for r in records))
    columns = list(dict.fromkeys(r["column"] for r in records))
    values = np.full((len(rows), len(columns)), np.nan)
    for r in records:
        if r["ours"] is not None:
            values[rows.index(r["llm"]), columns.index(r["column"])] = r["ours"]
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    draw_cells(figure, axis, values, rows, columns, form="{:.1f}", low=low,
               top=high if high > low else low + 1, label=_unit(records), fontsize=8)


def _bars(axis, records: list[dict]) -> None:
    """A group of bars per LLM, one per column, each labelled with its value."""
    import numpy as np

    groups = list(dict.fromkeys(r["llm"] for r in records))
    series = list(dict.fromkeys(r["column"] for r in records))
    width = 0.8 / len(series)
    for s, name in enumerate(series):
        values = [next((r["ours"] for r in records if r["llm"] == g and r["column"] == name),
                       None) for g in groups]
        x = np.arange(len(groups)) + (s - (len(series) - 1) / 2) * width
        bars = axis.bar(x, [np.nan if v is None else v for v in values], width,
                        label=name or "ours")
        axis.bar_label(bars, labels=["n/a" if v is None else f"{v:.1f}" for v in values],
                       fontsize=7)
    axis.set_xticks(range(len(groups)), groups, rotation=20, ha="right", fontsize=8)
    axis.set_ylabel(_unit(records))
    if len(series) > 1 or series[0]:
        axis.legend(fontsize=7)


def _unit(records: list[dict]) -> str:
    return {"percent": "%", "count": "passages", "perplexity": "perplexity"}[records[0]["unit"]]
