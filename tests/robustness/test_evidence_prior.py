"""Shrink toward the pool: a newcomer known by three correct answers routes by what the pool knows about the
clusters it never answered, so it does not take most of the traffic (it took 76-100% with the own-mean fallback).

The pool below is hand-made so every number can be checked on paper: K = 4 one-prompt-wide clusters (centroids
e1..e4), three established models with 40 validation answers per cluster, and `new` with 3 correct answers, all
in cluster 0, priced like `mid`.
"""

from __future__ import annotations

import numpy as np
import pytest

from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.psi import POOL_PRIOR_ANSWERS, psi_from_losses
from uniroute.routers.router import Router
from uniroute.routers.tables import routing_tables

MODELS = ("big", "mid", "small", "new")
PSI = np.array([
    [0.10, 0.20, 0.15, 0.25],
    [0.25, 0.30, 0.25, 0.35],
    [0.50, 0.60, 0.55, 0.60],
    [0.00, 0.00, 0.00, 0.00],  # new: its measured row alone (onboarding fills empty cells with its own mean 0.0)
])
COUNTS = np.array([[40] * 4] * 3 + [[3, 0, 0, 0]])
COSTS = np.array([1.0, 0.3, 0.1, 0.3])
CENTRES = Centroids(np.eye(4, dtype=np.float32))

# By hand, with A = 20 pseudo-answers: the pool's loss in cluster 0 is 40 * (0.1 + 0.25 + 0.5) / 123 = 34 / 123,
# in cluster 1 40 * (0.2 + 0.3 + 0.6) / 120 = 1.1 / 3. new stands 0 - 34/123 from the pool where it answered and
# keeps 3 / 23 of that lead, so its cluster-1 cell is 1.1/3 - 3/23 * 34/123 = 0.330612 (not 0.0).
NEW_CLUSTER1 = 1.1 / 3 - 3 / 23 * 34 / 123
# Count-aware (s = 5): cluster 0's prior 34/123 - 3/23 * 34/123, its 3 answers at 0 weigh 3 / (3 + 5).
NEW_CLUSTER0_SHRUNK = 5 * (34 / 123 - 3 / 23 * 34 / 123) / 8


def _router(models=MODELS, shrinkage: float = 0.0) -> Router:
    n = len(models)
    return Router("e", models, COSTS[:n], PSI[:n], CENTRES, COUNTS[:n], shrinkage=shrinkage)


def _shares(router: Router) -> dict[float, dict[str, float]]:
    """{budget: {model: share of the clusters routed to it}} of the published budget grid."""
    routes = routing_tables(router, router.models).routes
    routes = routes[routes.grid == "budget"]
    return {float(b): (g.model.value_counts() / len(g)).to_dict() for b, g in routes.groupby("budget")}


def test_the_prior_weight_is_the_documented_one():
    assert POOL_PRIOR_ANSWERS == 20.0  # the hand-computed numbers below assume it


@pytest.mark.parametrize("shrinkage", [0.0, 5.0], ids=["kmeans", "kmeans_shrunk"])
def test_three_lucky_answers_route_by_the_pool_prior_where_the_model_answered_nothing(shrinkage):
    routing = _router(shrinkage=shrinkage).routing_psi
    assert routing[3, 1] == pytest.approx(NEW_CLUSTER1, abs=1e-12)
    assert routing[3, 1] > PSI[0, 1]  # never better than the pool's best where it answered nothing
    if shrinkage == 0:
        assert routing[3, 0] == 0.0  # plain K-means keeps the paper's Psi where the model has answers
        np.testing.assert_array_equal(routing[:3], PSI[:3])  # fully answered rows are the paper's means
    else:
        assert routing[3, 0] == pytest.approx(NEW_CLUSTER0_SHRUNK, abs=1e-12)


@pytest.mark.parametrize("shrinkage", [0.0, 5.0], ids=["kmeans", "kmeans_shrunk"])
def test_the_newcomer_takes_no_more_traffic_than_the_pools_best_at_any_budget(shrinkage):
    with_new = _shares(_router(shrinkage=shrinkage))
    without = _shares(_router(MODELS[:3], shrinkage=shrinkage))
    for budget, shares in with_new.items():
        new = shares.get("new", 0.0)
        assert new <= 0.25, (budget, shares)  # at most the one cluster it has answers in, never most traffic
        assert new <= max(without[budget].values()), (budget, shares, without[budget])


def test_a_row_measured_alone_joins_with_the_pool_prior_not_its_own_mean():
    # Onboarding measures the newcomer's row on its own: its empty cells hold its own mean 0.0 there ...
    alone = psi_from_losses(np.zeros(3, dtype=np.int64), np.zeros((3, 1)), 4, ["new"])
    np.testing.assert_array_equal(alone.values, [[0.0, 0.0, 0.0, 0.0]])
    # ... and joining the pool routes those cells by what the pool knows.
    pool = _router(MODELS[:3]).with_model("new", alone.values[0], 0.3, alone.counts[0])
    assert pool.routing_psi[3, 1] == pytest.approx(NEW_CLUSTER1, abs=1e-12)
    assert pool.psi[3, 1] == 0.0  # what validation measured is kept as measured
