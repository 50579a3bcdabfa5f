"""The build's held-out deferral curves as a PNG, for the MLflow run of a router version."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def plot_build_curves(curves: pd.DataFrame, path: Path, title: str) -> None:
    """Held-out deferral curves of one build."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for method, rows in curves.groupby("method"):
        xs = np.concatenate([[0.0], rows["cost"], [1.0]])
        ys = np.concatenate([[rows["score"].iloc[0]], rows["score"], [rows["score"].iloc[-1]]])
        ax.plot(xs, ys, label=method)
    ax.set(xlabel="normalised cost", ylabel="mean test score", title=title, xlim=(0, 1))
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
