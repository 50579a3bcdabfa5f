"""Grids that follow the data: ladders, and a search that climbs until the Area turns down."""

from __future__ import annotations

import numpy as np

from uniroute.routers.kinds import cluster_ladder, ladder, neighbour_ladder
from uniroute.selection.grids import widening_search


def test_ladders_start_at_one_and_end_at_their_bound() -> None:
    assert ladder((1, 1.5), 2, 20) == [1, 2, 3, 4, 6, 8, 12, 16, 20]
    assert cluster_ladder(1203, 7219)[:9] == [1, 2, 3, 4, 6, 8, 12, 16, 24] and cluster_ladder(1203, 7219)[-1] == 1203
    assert cluster_ladder(25, 10) == [1, 2, 3, 4, 6, 8, 10]  # never more clusters than training prompts
    assert neighbour_ladder(25) == [1, 2, 3, 5, 8, 10, 20, 25]
    assert neighbour_ladder(1) == [1]


def test_the_search_climbs_until_the_area_turns_down() -> None:
    values = cluster_ladder(1000, 5000)
    seen = []

    def area(k: int) -> float:
        seen.append(k)
        return -abs(np.log(k) - np.log(20))  # best at K = 20: between rungs 16 and 24

    found = widening_search(area, values, start=3, patience=2)
    assert found.chosen == 24 and not found.at_edge and not found.at_bound
    assert seen == values[: values.index(24) + 3]  # two rungs above the best, then stop
    assert set(found.areas) == set(seen)


def test_edges_and_bounds() -> None:
    rising = widening_search(float, [1, 2, 3, 5, 8], start=2)
    assert rising.chosen == 8 and rising.at_bound and not rising.at_edge  # the last rung is a principled bound
    capped = widening_search(float, [1, 2, 3, 5, 8], max_rungs=3, start=2)
    assert capped.chosen == 3 and capped.at_edge and not capped.at_bound  # stopped by the cap: an edge
    falling = widening_search(lambda v: -v, [1, 2, 3, 5, 8], start=2)
    assert falling.chosen == 1 and falling.at_bound and falling.areas.keys() == {1, 2, 3}
    ties = widening_search(lambda v: 0.5, [1, 2, 3, 5, 8], start=2)
    assert ties.chosen == 1  # equal Areas: the smaller value
