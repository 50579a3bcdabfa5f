import numpy as np
import pytest

from uniroute.routers.baselines.zero import (
    zero_router_curve_points,
    zero_router_hull,
    zero_router_mixture,
)
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router

NAN = np.nan


def test_zero_router_hull_by_hand():
    # (cost, quality): m0 (1, .2), m1 (2, .6), m2 (3, .7), m3 (4, .9), m4 (5, .85), m5 (2, .5)
    # m5: same cost as m1, worse -> off. m4: dearer and worse than m3 -> off (non-decreasing part).
    # m2: below the chord m1-m3 (quality .75 at cost 3) -> off. m1: above the chord m0-m3 (.433 at 2) -> on.
    costs = np.array([1, 2, 3, 4, 5, 2], dtype=float)
    quality = np.array([0.2, 0.6, 0.7, 0.9, 0.85, 0.5])
    assert zero_router_hull(costs, 1 - quality).tolist() == [0, 1, 3]


def test_zero_router_hull_drops_collinear_and_keeps_first_of_duplicates():
    costs = np.array([3.0, 1.0, 2.0, 1.0])
    losses = 1 - np.array([0.75, 0.25, 0.5, 0.25])  # collinear; m1 and m3 identical
    assert zero_router_hull(costs, losses).tolist() == [1, 0]
    # A single model, and a cheapest model that is also the best, are hulls of one point.
    assert zero_router_hull(np.array([2.0]), np.array([0.3])).tolist() == [0]
    assert zero_router_hull(np.array([1.0, 2.0]), np.array([0.1, 0.4])).tolist() == [0]


def test_k1_uniroute_only_ever_picks_hull_models():
    # Paper, appendix proposition: with K = 1 the plug-in rule returns a model on the hull, at every lambda.
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = 8
        costs, losses = rng.uniform(0.1, 5, m), rng.uniform(0, 1, m)
        hull = set(zero_router_hull(costs, losses).tolist())
        r = Router("e", tuple(map(str, range(m))), costs, losses[:, None], Centroids(np.zeros((1, 2))))
        picked = {int(r.cluster_table(lam)[0]) for lam in np.concatenate([[0], np.geomspace(1e-4, 100, 400)])}
        assert picked <= hull
        assert len(picked) == len(hull)  # and the sweep visits every hull vertex


def test_zero_router_mixture_matches_the_paper():
    hull = np.array([0, 1, 3])
    costs = np.array([1.0, 2.0, 9.0, 4.0])
    # B = 3 between c(m1) = 2 and c(m3) = 4: p(m1) = (4 - 3) / (4 - 2) = 1/2; expected cost = 3.
    m1, m2, p1 = zero_router_mixture(hull, costs, 3.0)
    assert (m1, m2, p1) == (1, 3, 0.5)
    assert p1 * costs[m1] + (1 - p1) * costs[m2] == 3.0
    m1, m2, p1 = zero_router_mixture(hull, costs, 1.5)
    assert (m1, m2) == (0, 1) and p1 == pytest.approx(0.5)
    assert zero_router_mixture(hull, costs, 2.0) == (1, 3, 1.0)  # c(m1) <= B: all on m1
    assert zero_router_mixture(hull, costs, 0.5) == (0, 0, 1.0)
    assert zero_router_mixture(hull, costs, 7.0) == (3, 3, 1.0)


def test_zero_router_curve_points_are_hull_models_test_points():
    hull = np.array([0, 1, 3])
    test_costs = np.array([0.1, 0.3, 0.9, 1.0])
    test_scores = np.array([0.4, 0.6, 0.2, 0.7])
    c, s = zero_router_curve_points(hull, test_costs, test_scores)
    assert c.tolist() == [0.1, 0.3, 1.0] and s.tolist() == [0.4, 0.6, 0.7]
    # Mixing m1 and m3 at p gives the expected test point on the segment between their vertices.
    p = 0.25
    mix = (p * test_costs[1] + (1 - p) * test_costs[3], p * test_scores[1] + (1 - p) * test_scores[3])
    assert np.interp(mix[0], c, s) == pytest.approx(mix[1])
