"""Candidate grids for the hyper-parameters (k of K-NN, K of K-means and the LearnedMap; paper appendix)."""

from __future__ import annotations

import logging
import math

log = logging.getLogger(__name__)

def candidate_grid(lo: int, hi: float, ratio: float) -> list[int]:
    """Integers from lo to floor(hi) spaced by about `ratio` (geometric), always including both ends.

    A fixed ladder lo * ratio**i (rather than geomspace between the ends) makes the grids of different
    validation sizes share values, so fitted clusterings are reused across the validation-size study.
    """
    top = max(int(math.floor(hi)), lo)
    values = []
    v = float(lo)
    while round(v) < top / math.sqrt(ratio):  # stop early rather than crowd the upper end
        values.append(round(v))
        v *= ratio
    values.append(top)
    return sorted(set(values))


def knn_candidates(n_val: int) -> list[int]:
    """Candidate k for K-NN: 5 to n_val / 3 (paper appendix), spaced by a factor of about 2."""
    return candidate_grid(5, n_val / 3, 2.0)


def kmeans_candidates(n_val: int) -> list[int]:
    """Candidate K for K-means and LearnedMap: 3 to n_val / 50 (paper appendix; K = 3 when that is below 3)."""
    return candidate_grid(3, n_val / 50, 1.5)


def learned_map_candidates(n_val: int) -> list[int]:
    """Candidate K for the LearnedMap: every other K-means candidate, keeping both ends.

    Same range as K-means (3 to n_val / 50), thinned because each candidate trains a network (about 2 s on
    mmlu_pro_cot29's 7,200 training prompts) while a K-means candidate costs about 0.2 s: with the full grid
    the LearnedMap alone would take most of the 10-minute budget for 100 trials.
    """
    grid = kmeans_candidates(n_val)
    return sorted({*grid[::2], grid[-1]})
