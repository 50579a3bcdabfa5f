"""Hyper-parameter grids that follow the data: a ladder of values searched upward until the validation Area
turns down, or until a principled bound.

The paper's grids stop at fixed fractions of the validation set (K up to n_val / 50, k up to n_val / 3); on our
data the chosen value sat on the last rung in most trials, a sign the grid was too small. Here the ladder
starts at the smallest meaningful value (K = 1 is the cluster-free router, k = 1 the nearest neighbour) and
keeps climbing while the best Area is on one of the top `patience` rungs searched, so the chosen value has at
least `patience` searched values above it unless it reached the bound: the number of validation prompts for K
(a cluster needs validation prompts to measure a Psi cell) and for k (there are no more references), and the
number of training prompts for K (K-means needs a prompt per cluster).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

CLUSTER_STEPS = (1, 1.5)  # clusters: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, ... (x 2 ** j, about x 1.4 per rung)
NEIGHBOUR_STEPS = (1, 2, 3, 5, 8)  # neighbours: 1, 2, 3, 5, 8, 10, 20, 30, 50, 80, 100, ... (x 10 ** j)
START_RUNGS = 5  # rungs always searched before the widening starts
PATIENCE = 2  # rungs above the best that must be searched (and found lower) before the search stops


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


def widening_search(area_of: Callable[[int], float], values: list[int], max_rungs: int | None = None,
                    start: int = START_RUNGS, patience: int = PATIENCE) -> GridSearch:
    """Search values (increasing) from the bottom, climbing until the best Area has `patience` lower rungs above.

    max_rungs caps the number of values searched (compute); stopping at that cap with the best on top is an edge.
    Ties go to the smaller value.
    """
    if not values:
        raise ValueError("no candidate values to search")
    cap = len(values) if max_rungs is None else min(len(values), max_rungs)
    areas: dict[int, float] = {}
    i = 0
    while i < cap:
        areas[values[i]] = float(area_of(values[i]))
        i += 1
        best = max(areas, key=lambda v: (areas[v], -v))
        above = sum(v > best for v in areas)
        if i >= start and above >= patience:
            break
    best = max(areas, key=lambda v: (areas[v], -v))
    at_bound = best in (values[0], values[-1])
    at_edge = not at_bound and best == max(areas) and len(areas) < len(values)
    return GridSearch(chosen=best, areas=areas, at_bound=at_bound, at_edge=at_edge)



def search_record(search: GridSearch, shrinkage: float = 0.0, **extra: object) -> dict[str, object]:
    """A trial's JSON record of a search (report.tuning_summary reads it): the chosen value, where it sits on
    the ladder, and every searched value's score."""
    return {"value": search.chosen, "shrinkage": shrinkage, "at_edge": search.at_edge, "at_bound": search.at_bound,
            "areas": {str(v): a for v, a in search.areas.items()}, **extra}
