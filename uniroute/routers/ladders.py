"""The ladders router kinds search their hyper-parameter on, and the record of one search.

A ladder starts at the smallest meaningful value (K = 1 is the cluster-free router, k = 1 the nearest
neighbour) and climbs about geometrically to a principled bound (selection.grids searches it upward until the
validation Area turns down).
"""

from __future__ import annotations

from dataclasses import dataclass

CLUSTER_STEPS = (1, 1.5)  # clusters: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, ... (x 2 ** j, about x 1.4 per rung)
NEIGHBOUR_STEPS = (1, 2, 3, 5, 8)  # neighbours: 1, 2, 3, 5, 8, 10, 20, 30, 50, 80, 100, ... (x 10 ** j)


def ladder(steps: tuple[float, ...], base: int, top: int) -> list[int]:
    """The integers step * base ** j (j = 0, 1, ...) below `top`, then `top` itself: 1 ... top, increasing."""
    values: set[int] = set()
    scale = 1
    while min(steps) * scale < top:
        values.update(round(step * scale) for step in steps if round(step * scale) < top)
        scale *= base
    return sorted(values | {max(1, top)})


def cluster_ladder(n_val: int, n_train: int) -> list[int]:
    """Candidate K (K-means, LearnedMap): 1 to min(n_val, n_train)."""
    return ladder(CLUSTER_STEPS, 2, max(1, min(n_val, n_train)))


def neighbour_ladder(n_val: int) -> list[int]:
    """Candidate k (K-NN over the validation prompts): 1 to n_val."""
    return ladder(NEIGHBOUR_STEPS, 10, max(1, n_val))


@dataclass(frozen=True)
class GridSearch:
    """The searched values, their validation Areas, the chosen one and where it sits on the ladder."""

    chosen: int
    areas: dict[int, float]
    at_bound: bool  # chosen is the ladder's first or last value: a principled limit, not a grid too small
    at_edge: bool  # chosen is the largest value searched while larger ones were left unsearched (budget cap)
