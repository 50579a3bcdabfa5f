"""An evaluation's plot titles stay inside their figures, whatever the embedder id's length."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uniroute.experiments.plots import TITLE_WIDTH, wrapped_title, write_curve_plot

EMBEDDER_ID = "minilm-onnx:all-MiniLM-L6-v2@0.1.0:left256:int8pc:alone:d384:4d5d5c2fc22f"
RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


def test_a_title_wraps_at_spaces_and_never_inside_an_embedder_id() -> None:
    title = f"routerdc_model7: 100 trials, {EMBEDDER_ID}\nArea vs number of validation prompts"
    lines = wrapped_title(title).splitlines()
    assert lines == ["routerdc_model7: 100 trials,", EMBEDDER_ID, "Area vs number of validation prompts"]
    assert all(len(line) <= TITLE_WIDTH for line in lines if " " in line)  # only a word longer than a line is


def test_the_curve_plots_title_fits_its_figure(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    report = json.loads((RESULTS / "routerdc_model7.json").read_text())
    shown = []
    original = plt.Figure.savefig

    def keep(fig, *args, **kwargs):  # the figure as saved: its title's extent against its own
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        shown.append((fig.axes[0].title.get_window_extent(renderer), fig.bbox))
        return original(fig, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plt.Figure, "savefig", keep)
        write_curve_plot(report, tmp_path / "curve.png", f"routerdc_model7: 100 trials, {EMBEDDER_ID}")
    [(title, figure)] = shown
    assert figure.x0 <= title.x0 and title.x1 <= figure.x1, (title, figure)
