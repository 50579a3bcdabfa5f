"""Plots of an evaluation: mean deferral curves, Area against the number of validation prompts."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from uniroute.experiments.methods import METHOD_LABELS, METHODS, ORACLES

log = logging.getLogger(__name__)

TITLE_WIDTH = 70  # characters per title line at fontsize 10: an embedder id alone is ~75, with a dataset's name more


def wrapped_title(title: str) -> str:
    """The title with each line wrapped at spaces (never inside an embedder id), so none runs off the figure."""
    return "\n".join(textwrap.fill(line, TITLE_WIDTH, break_long_words=False, break_on_hyphens=False)
                     for line in title.splitlines())


def write_curve_plot(report: dict[str, Any], path: Path, title: str) -> None:
    """Mean deferral curve per method (oracles dashed) with every trial's test LLMs as faded grey x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    points = report["test_llm_points"]
    xs = [c for trial in points for _, c, _ in trial]
    ys = [s for trial in points for _, _, s in trial]
    alpha = max(0.2, min(0.6, 20.0 / max(len(points), 1)))
    ax.scatter(xs, ys, marker="x", color="grey", alpha=alpha, s=14, linewidths=0.8,
               label=f"test LLMs ({len(points)} trials)", zorder=1)
    grid = np.asarray(report["mean_curve"]["cost"])
    for i, m in enumerate(m for m in METHODS if m in report["methods"]):
        # matplotlib's cycle has ten colours: past ten methods the colours repeat, dotted, so no two lines look alike
        style = "--" if m in ORACLES else ("-" if i < 10 else ":")
        s = report["methods"][m]
        ax.plot(grid, report["mean_curve"][m], style, color=f"C{i % 10}", lw=1.8, zorder=2,
                label=f"{METHOD_LABELS[m]}  (Area {s['area']:.3f})")
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("normalised cost (mean cost / most expensive test LLM's cost)")
    ax.set_ylabel("mean test score")
    ax.set_title(wrapped_title(title), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def write_val_size_plot(report: dict[str, Any], path: Path, title: str) -> None:
    """Area versus validation size (log x) with 96% intervals, one line per method."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    sizes = np.asarray(report["sizes"], dtype=float)
    for i, (m, vals) in enumerate(report["methods"].items()):
        offset = sizes * (1 + 0.03 * (i - 1))  # small horizontal offsets keep the bars apart
        ax.errorbar(offset, vals["mean"], yerr=vals["half_width"], marker="o", capsize=3, label=METHOD_LABELS[m])
    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())  # only the studied sizes are labelled
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(int(s)) for s in sizes])
    ax.set_xlabel("number of validation prompts (last = all)")
    ax.set_ylabel("Area on unseen test LLMs (96% interval)")
    ax.set_title(wrapped_title(title), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
