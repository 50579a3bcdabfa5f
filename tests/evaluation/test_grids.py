"""Evaluation protocol and metrics: hand-checked curve fixtures, the sign test, the trial pipeline."""

from __future__ import annotations

from uniroute.evaluation import (
    candidate_grid,
    kmeans_candidates,
    knn_candidates,
)


# ---- hyper-parameter grids ----------------------------------------------------------------------------------
def test_candidate_grids_include_both_ends() -> None:
    assert knn_candidates(1203) == [5, 10, 20, 40, 80, 160, 401]
    assert kmeans_candidates(1203) == [3, 4, 7, 10, 15, 24]
    assert kmeans_candidates(100) == [3]  # n_val / 50 < 3: K = 3 only
    assert knn_candidates(25) == [5, 8]
    assert candidate_grid(5, 4, 2.0) == [5]
    for n_val in (60, 316, 1203, 2057):
        ks = kmeans_candidates(n_val)
        assert ks[0] == 3 and ks[-1] == max(3, n_val // 50) and ks == sorted(set(ks))
