"""The hierarchy pilot's group cells: a group's cell is the count-weighted mean of its fine cells, read back per
fine cell, and an empty group takes the pool prior like an empty cell."""

from __future__ import annotations

import numpy as np

from benchmarks.quality.hierarchy_pilot import group_cells
from uniroute.routers.cluster.psi import pool_prior


def test_a_group_cell_is_the_count_weighted_mean_of_its_fine_cells() -> None:
    values = np.array([[0.2, 0.6, 0.5], [0.4, 0.4, 0.1]])
    counts = np.array([[3, 1, 2], [1, 1, 4]])
    out = group_cells(values, counts, np.array([0, 0, 1]), 2, 0.0)
    assert np.allclose(out[0], [(0.6 + 0.6) / 4, (0.6 + 0.6) / 4, 0.5])  # 3*.2 + 1*.6 over 4 answers
    assert np.allclose(out[1], [0.4, 0.4, 0.1])


def test_an_empty_group_takes_the_pool_prior() -> None:
    values = np.array([[0.2, 0.9], [0.4, 0.1]])
    counts = np.array([[5, 0], [5, 0]])
    out = group_cells(values, counts, np.array([0, 1]), 2, 0.0)
    prior = pool_prior(np.array([[0.2, 0.0], [0.4, 0.0]]), counts)
    assert np.allclose(out[:, 1], prior[:, 1]) and not np.allclose(out[:, 1], values[:, 1])
