"""A table drawn as a heatmap whose colour bar reads in the cells' own unit, and the one way a
cell's value is written (in the figure, the card and the CLI's tables).

Three scales: `percent` (a share 0–1 written and coloured 0–100 %), `fraction` (0–1 as it
is) and `count` (0 to the largest cell, e.g. passages per query). The title is wrapped to the
figure's width and the layout keeps every label inside the canvas.

>>> cell_text(0.625, "percent"), cell_text(1 / 3, "fraction"), cell_text(1.5, "count")
('62.5%', '0.33', '1.50')
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Scale:
    """How a scale writes and colours a value."""

    factor: float  # the written value is value * factor
    form: str  # format of the written value
    vmax: float | None  # top of the colour bar, in written units; None: the largest cell
    label: str  # the colour bar's label


SCALES = {
    "percent": Scale(100.0, "{:.1f}%", 100.0, "%"),
    "fraction": Scale(1.0, "{:.2f}", 1.0, "fraction"),
    "count": Scale(1.0, "{:.2f}", None, "passages per query"),
}

_TITLE_SIZE = 10  # points


def cell_text(value: float | None, scale: str) -> str:
    """A value as written in `scale`; "n/a" for None."""
    if value is None:
        return "n/a"
    spec = SCALES[scale]
    return spec.form.format(value * spec.factor)


def heatmap_png(values: Sequence[Sequence[float | None]], rows: Sequence[str],
                columns: Sequence[str], **labels: str) -> bytes:
    """`heatmap_figure` saved as a PNG: the file's bytes (no timestamp, so reproducible)."""
    import matplotlib.pyplot as plt

    figure = heatmap_figure(values, rows, columns, **labels)
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=120, metadata={"Software": None})
    plt.close(figure)
    return png.getvalue()


def heatmap_figure(values: Sequence[Sequence[float | None]], rows: Sequence[str],
                   columns: Sequence[str], *, title: str, scale: str, xlabel: str,
                   ylabel: str) -> Figure:
    """A rows x columns table of `values` (None: n/a) as a heatmap: every cell written with
    `cell_text`, coloured on a bar from 0 to the scale's top (for `count`, the largest
    cell, at least 1) in the same unit."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import numpy as np

    spec = SCALES[scale]
    shown = np.array([[np.nan if v is None else v * spec.factor for v in row] for row in values],
                     dtype=float).reshape(len(rows), len(columns))
    top = spec.vmax or max(1.0, float(np.nanmax(shown, initial=0.0)))
    width = 2.6 + 1.15 * len(columns) + 0.06 * max(map(len, rows), default=0)
    lines = textwrap.wrap(title, width=max(20, math.floor(width * 72 / (0.58 * _TITLE_SIZE))))
    height = 1.9 + 0.5 * len(rows) + 0.2 * len(lines)
    figure, axes = plt.subplots(figsize=(width, height), layout="constrained")
    draw_cells(figure, axes, shown, rows, columns, form=spec.form, low=0.0, top=top,
               label=spec.label)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title("\n".join(lines), fontsize=_TITLE_SIZE)
    return figure


def draw_cells(figure: Figure, axes, shown, rows: Sequence[str], columns: Sequence[str], *,
               form: str, low: float, top: float, label: str, fontsize: float | None = None
               ) -> None:
    """Draw `shown` (rows x columns, in written units, NaN: n/a) on `axes` as coloured cells
    from `low` to `top`, each written with `form` (n/a in grey), light text on the dark part
    of the scale, and the colour bar labelled `label`."""
    import numpy as np

    image = axes.imshow(shown, vmin=low, vmax=top, cmap="viridis", aspect="auto")
    axes.set_xticks(range(len(columns)), columns, rotation=30, ha="right", fontsize=fontsize)
    axes.set_yticks(range(len(rows)), rows, fontsize=fontsize)
    for (i, j), v in np.ndenumerate(shown):
        blank = np.isnan(v)  # drawn as the background: grey text
        axes.text(j, i, "n/a" if blank else form.format(v), ha="center", va="center",
                  fontsize=8, color="0.4" if blank else "white" if image.norm(v) < 0.6 else "black")
    figure.colorbar(image, ax=axes, label=label)
