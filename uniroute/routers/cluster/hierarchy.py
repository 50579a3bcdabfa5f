"""The cluster hierarchy: one fine clustering routed by the mean of three levels of each cell.

"Psi from several K" (count-aware K-means' gamma averaged over K-means with K/2, K and 2K clusters) measured above
the served router, but serving it needs three clusterings and a model row in each. The hierarchy keeps one: the
fine clustering (K_f = 2K) holds every model's Psi row as measured, and a cell routes by the mean of

    the cell itself, its group among K_f / 2 groups, and its group among K_f / 4 groups,

a group being the fine clusters whose centres fall nearest one centre of a coarser K-means clustering of the
training prompts, and a group's cell the count-weighted mean of its fine cells (so the group level of a model is
its mean loss over the group's prompts). Each level is shrunk toward the pool prior with the router's strength s,
as count-aware K-means shrinks its cells (psi.shrunk_values). A new model's row is still its per-cluster mean on
the fine clustering: onboarding, the evidence gate, the cost cap and the stored Psi are those of one clustering,
and the group cells are derived from it whenever the table is read.

Shapes: M models, K_f fine clusters, G groups of one coarser level.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.psi import shrunk_values


def group_sizes(k_fine: int) -> tuple[int, ...]:
    """The coarser levels' numbers of groups of a fine clustering with k_fine clusters: K_f / 2 and K_f / 4 (at
    least 1; one level when they coincide)."""
    return tuple(sorted({max(1, k_fine // 2), max(1, k_fine // 4)}, reverse=True))


def group_map(fine: Centroids, groups: Centroids) -> np.ndarray:
    """(K_f,) the group of each fine cluster: the coarser centre nearest its centre."""
    return groups.assign(fine.centers)


def group_cells(values: np.ndarray, counts: np.ndarray, groups: np.ndarray, n_groups: int,
                strength: float) -> np.ndarray:
    """(M, K_f) each fine cell's group cell: the count-weighted mean of the group's measured cells, shrunk by
    `strength` toward the pool prior at the group level (an empty group cell takes the prior), read back per fine
    cell."""
    onehot = np.eye(n_groups)[groups]  # (K_f, G)
    g_counts = np.asarray(counts, dtype=np.float64) @ onehot  # (M, G)
    g_sums = (np.where(counts > 0, values, 0.0) * counts) @ onehot
    g_values = np.where(g_counts > 0, g_sums / np.maximum(g_counts, 1), 0.0)
    return shrunk_values(g_values, np.rint(g_counts).astype(np.int64), strength)[:, groups]


def hierarchy_psi(values: np.ndarray, counts: np.ndarray, strength: float,
                  maps: Sequence[tuple[np.ndarray, int]]) -> np.ndarray:
    """(M, K_f) the Psi a hierarchy routes by: the mean of the shrunk fine cells and each level's group cells.

    maps: per coarser level, (its group of each fine cluster (K_f,), its number of groups)."""
    levels = [shrunk_values(values, counts, strength)]
    levels += [group_cells(values, counts, groups, n, strength) for groups, n in maps]
    return np.mean(levels, axis=0)
