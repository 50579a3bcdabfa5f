"""Per-cluster model costs for the cost cap: what model m is expected to cost on a prompt of cluster k.

Per-prompt costs follow prompt length (RouterBench bills per token), and a cluster router concentrates long
prompts: a cluster of long prompts routed to a dear model costs more than that model's mean cost. The rule
still ranks by the model's one cost (paper eq. 5); only a cost cap (routers.budgets.cost_cap) checks its expected
mean cost on these per-cluster estimates.

They are kept as a scale (M, K): the mean cost of m on the prompts of cluster k its Psi cell comes from,
divided by m's mean cost over all those prompts, so cost (M,) * scale (M, K) is the cell's mean cost. A scale,
not the absolute cost, because the router's costs move without the logs: a per-call price in force, a replay
at another price snapshot (replay.repriced). Repricing a model then scales its cells with it. A cell with no
costed rows (or a model whose rows all cost 0) has scale 1: the model's mean cost.

Frame (sql/queries/cost_by_cluster.sql): columns model, cluster, cost_sum, n (costed rows only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas where a frame is made: a router read from its file routes without it
    import pandas as pd

COST_FRAME_COLUMNS = ("model", "cluster", "cost_sum", "n")


def cost_scale(frame: pd.DataFrame, models: Sequence[str], k: int) -> np.ndarray:
    """(M, K) each model's mean cost per cluster over its mean cost on the same rows; 1 where a cell (or the
    whole model) has no costed rows or the model's rows cost nothing."""
    missing = [c for c in COST_FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"cost frame lacks columns {missing} (has {list(frame.columns)})")
    index = {m: i for i, m in enumerate(models)}
    sums = np.zeros((len(models), k), dtype=np.float64)
    counts = np.zeros((len(models), k), dtype=np.float64)
    rows = frame[frame["model"].isin(index) & (frame["n"] > 0)]
    clusters = rows["cluster"].to_numpy(dtype=np.int64)
    if clusters.size and (clusters.min() < 0 or clusters.max() >= k):
        raise ValueError(f"cluster ids must lie in [0, {k}), got range [{clusters.min()}, {clusters.max()}]")
    codes = rows["model"].map(index).to_numpy(dtype=np.int64)
    np.add.at(sums, (codes, clusters), rows["cost_sum"].to_numpy(dtype=np.float64))
    np.add.at(counts, (codes, clusters), rows["n"].to_numpy(dtype=np.float64))
    total = counts.sum(axis=1, keepdims=True)
    mean = np.divide(sums.sum(axis=1, keepdims=True), total, out=np.zeros_like(total), where=total > 0)
    cell = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    known = (counts > 0) & (mean > 0)
    return np.where(known, np.divide(cell, mean, out=np.ones_like(cell), where=mean > 0), 1.0)


def cost_frame_of(clusters: np.ndarray, costs: np.ndarray, models: Sequence[str]) -> pd.DataFrame:
    """The cost frame of in-memory rows (benchmarks, tests): clusters (n,), costs (n, M) with NaN where a model
    has no cost on a prompt; the same group-by as sql/queries/cost_by_cluster.sql."""
    import pandas as pd

    clusters = np.asarray(clusters, dtype=np.int64)
    costs = np.asarray(costs, dtype=np.float64)
    out = []
    for j, model in enumerate(models):
        known = ~np.isnan(costs[:, j])
        k_of = clusters[known]
        n = np.bincount(k_of)
        sums = np.bincount(k_of, weights=costs[known, j], minlength=n.size)
        here = np.nonzero(n)[0]
        out.append(pd.DataFrame({"model": model, "cluster": here, "cost_sum": sums[here], "n": n[here]}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=list(COST_FRAME_COLUMNS))
