"""The comparison's heatmaps read at a glance: every title and label inside the canvas, the
colour bar in the cells' own unit and range, every cell written as the tables write it.

The tables are the paper's four LLMs and the human gold (its Figure 3 and 2 values, NQ)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from labeler.report.heatmap import cell_text, heatmap_figure, heatmap_png
from labeler.workflows.compare import HUMAN, VIEWS

LLMS = ["llama3.1-8b", "qwen3-8b", "qwen3-14b", "qwen3-32b"]
COLUMNS = [*LLMS, HUMAN]
#: RAG accuracy (shares) of each reader with each LLM's GUPs and the human gold; one n/a
ACCURACY = [[0.803, 0.712, 0.705, 0.709, 0.705],
            [0.702, 0.786, 0.741, 0.735, 0.673],
            [0.737, 0.769, 0.807, 0.772, 0.716],
            [0.757, 0.785, 0.789, 0.822, None]]
#: passages shared per query
OVERLAP = [[1.92, 1.21, 1.25, 1.23, 0.61],
           [1.21, 2.28, 1.62, 1.55, 0.70],
           [1.25, 1.62, 2.13, 1.66, 0.68],
           [1.23, 1.55, 1.66, 2.08, 0.66]]


@pytest.fixture
def drawn():
    """Draw a figure and close it afterwards: (figure, renderer)."""
    figures = []

    def draw(values, scale, title, rows=LLMS, columns=COLUMNS):
        figure = heatmap_figure(values, rows, columns, title=title, scale=scale,
                                xlabel="passages of", ylabel="reader")
        figure.canvas.draw()
        figures.append(figure)
        return figure, figure.canvas.get_renderer()

    yield draw
    for figure in figures:
        plt.close(figure)


def _inside(figure, renderer) -> None:
    """Everything drawn, the title's box among it, lies within the figure's canvas."""
    canvas = figure.bbox.extents
    [axes, _] = figure.axes  # the heatmap and its colour bar
    title = axes.title.get_window_extent(renderer)
    assert axes.title.get_text()
    assert canvas[0] <= title.x0 and title.x1 <= canvas[2], (title.extents, canvas)
    assert canvas[1] <= title.y0 and title.y1 <= canvas[3], (title.extents, canvas)
    tight = figure.get_tightbbox(renderer)  # in inches
    size = figure.get_size_inches()
    assert tight.x0 >= -0.01 and tight.y0 >= -0.01, tight
    assert tight.x1 <= size[0] + 0.01 and tight.y1 <= size[1] + 0.01, (tight, size)


@pytest.mark.parametrize("llms", [LLMS, ["smollm2-135m", "scripted"]], ids=["four", "two"])
@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.name)
def test_every_title_and_label_is_inside_the_canvas(view, llms, drawn):
    """The paper's four LLMs, and two (the narrowest figure, where the title was cut)."""
    values = OVERLAP if view.scale == "count" else ACCURACY
    rows = llms if view.name != "known_unknown" else [
        f"{llm}, {split} (n=1234)" for llm in llms for split in ("known", "unknown")]
    columns = [*llms, HUMAN]
    table = [row[:len(llms)] + row[-1:] for row in (values * 2)[:len(rows)]]
    _inside(*drawn(table, view.scale, view.title, rows, columns))


def test_percent_cells_sit_on_a_0_to_100_bar(drawn):
    figure, _ = drawn(ACCURACY, "percent", VIEWS[0].title)
    [axes, bar] = figure.axes
    image = axes.images[0]
    assert image.get_clim() == (0, 100)
    assert bar.get_ylim() == (0, 100)  # the colour bar's axis
    assert bar.get_ylabel() == "%"
    written = [t.get_text() for t in axes.texts]
    assert written == [cell_text(v, "percent") for row in ACCURACY for v in row]
    assert written[:2] == ["80.3%", "71.2%"] and written[-1] == "n/a"
    assert image.get_array()[0, 0] == pytest.approx(80.3)  # coloured as written


def test_counts_get_their_own_scale_up_to_the_largest_cell(drawn):
    figure, _ = drawn(OVERLAP, "count", VIEWS[1].title)
    [axes, bar] = figure.axes
    assert axes.images[0].get_clim() == (0, 2.28)
    assert bar.get_ylim() == (0, 2.28)
    assert bar.get_ylabel() == "passages per query"
    assert [t.get_text() for t in axes.texts][:2] == ["1.92", "1.21"]
    # no shared passage anywhere still draws a bar from 0 to 1
    figure, _ = drawn([[0.0] * len(COLUMNS)] * len(LLMS), "count", VIEWS[1].title)
    assert figure.axes[0].images[0].get_clim() == (0, 1)


def test_fractions_sit_on_a_0_to_1_bar(drawn):
    figure, _ = drawn(ACCURACY, "fraction", VIEWS[2].title)
    [axes, bar] = figure.axes
    assert axes.images[0].get_clim() == (0, 1) and bar.get_ylim() == (0, 1)
    assert axes.texts[0].get_text() == "0.80"


def test_the_png_is_the_same_for_the_same_table():
    png = heatmap_png(OVERLAP, LLMS, COLUMNS, title="t", scale="count", xlabel="x",
                      ylabel="y")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert png == heatmap_png(OVERLAP, LLMS, COLUMNS, title="t", scale="count", xlabel="x",
                              ylabel="y")
