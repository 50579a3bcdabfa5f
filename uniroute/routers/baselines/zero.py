"""ZeroRouter (paper appendix "Zero Routing"): the convex hull of the pool's validation (cost, quality),
mixing adjacent hull models to meet a budget. It ignores the prompt, so it is the K = 1 router's baseline.

Shapes: costs and losses_mean (M,)."""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger(__name__)

def zero_router_hull(costs: np.ndarray, losses_mean: np.ndarray) -> np.ndarray:
    """Indices of models on the non-decreasing convex hull of (cost, quality = 1 - loss), by increasing cost."""
    costs = np.asarray(costs, dtype=np.float64)
    quality = 1.0 - np.asarray(losses_mean, dtype=np.float64)
    if costs.shape != quality.shape or costs.ndim != 1 or costs.size == 0:
        raise ValueError(f"costs {costs.shape} and losses_mean {quality.shape} must be equal, non-empty (M,)")
    if not (np.all(np.isfinite(costs)) and np.all(np.isfinite(quality))):
        raise ValueError("costs and losses_mean must be finite")
    # By cost, then best quality first, then index: the first of equal-cost models is the one to keep.
    order = np.lexsort((np.arange(costs.size), -quality, costs))
    # Non-decreasing part: a model is worth its cost only if it beats every cheaper model.
    frontier: list[int] = []
    for i in order:
        if not frontier or quality[i] > quality[frontier[-1]]:
            frontier.append(int(i))
    # Upper concave hull (monotone chain): drop a vertex on or below the chord of its neighbours, since
    # mixing those neighbours reaches at least its quality at its cost.
    hull: list[int] = []
    for i in frontier:
        while len(hull) >= 2:
            o, a = hull[-2], hull[-1]
            cross = (costs[a] - costs[o]) * (quality[i] - quality[o]) - (quality[a] - quality[o]) * (
                costs[i] - costs[o]
            )
            if cross >= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return np.array(hull, dtype=np.int64)


def zero_router_mixture(hull: np.ndarray, costs: np.ndarray, budget: float) -> tuple[int, int, float]:
    """(m1, m2, p1): route to hull model m1 with probability p1, else m2, so the expected cost is the budget.

    Paper: c(m1) <= B < c(m2) adjacent on the hull, p1 = (c(m2) - B) / (c(m2) - c(m1)). Below the cheapest
    hull model the router uses it alone; at or beyond the dearest, the dearest alone.
    """
    hull = np.asarray(hull, dtype=np.int64)
    c = np.asarray(costs, dtype=np.float64)[hull]
    if budget <= c[0]:
        return int(hull[0]), int(hull[0]), 1.0
    if budget >= c[-1]:
        return int(hull[-1]), int(hull[-1]), 1.0
    j = int(np.searchsorted(c, budget, side="right"))  # c[j-1] <= B < c[j]
    p1 = (c[j] - budget) / (c[j] - c[j - 1])
    return int(hull[j - 1]), int(hull[j]), float(p1)


def zero_router_curve_points(
    hull: np.ndarray, model_costs_norm_test: np.ndarray, model_scores_test: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Test (normalised cost, score) vertices of the ZeroRouter curve, by increasing validation cost.

    Mixing adjacent hull models m1, m2 with probability p has expected test cost and score
    p * (c1, s1) + (1 - p) * (c2, s2): as the budget sweeps, the curve is the polyline through the hull
    models' own test points, so those points are its vertices.
    """
    hull = np.asarray(hull, dtype=np.int64)
    costs = np.asarray(model_costs_norm_test, dtype=np.float64)
    scores = np.asarray(model_scores_test, dtype=np.float64)
    if costs.shape != scores.shape:
        raise ValueError(f"test costs {costs.shape} and scores {scores.shape} differ in shape")
    return costs[hull].copy(), scores[hull].copy()
