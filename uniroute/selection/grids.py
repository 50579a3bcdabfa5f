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

from uniroute.routers.kinds import GridSearch

log = logging.getLogger(__name__)

START_RUNGS = 5  # rungs always searched before the widening starts
PATIENCE = 2  # rungs above the best that must be searched (and found lower) before the search stops


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
