
import numpy as np
import pytest

from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router
from uniroute.routers.tables import BUDGETS, NORMALISED_LAMBDAS, routing_tables

# Two clusters, three models: cheap model 0 is good on cluster 0, expensive model 2 is good everywhere.
PSI = np.array([[0.1, 0.9], [0.5, 0.5], [0.05, 0.1]])  # (M, K) losses
COSTS = np.array([1.0, 2.0, 10.0])
MODELS = ("cheap", "mid", "big")


def _router(psi=PSI, costs=COSTS):
    return Router("emb", MODELS[: len(costs)], costs, psi, Centroids(np.eye(psi.shape[1], 3, dtype=np.float32)))


def test_budget_rows_use_the_smallest_lambda_that_meets_the_budget():
    tables = routing_tables(_router(), MODELS, np.array([1, 1]))
    routes = tables.routes[tables.routes.grid == "budget"]
    # Budget 1.0 allows the best-quality choice; 0.55 moves cluster 0 to cheap: (0.5*1 + 0.5*10)/10 = 0.55.
    assert routes[routes.budget == 1.0].model.tolist() == ["big", "big"]
    assert routes[routes.budget == 0.6].model.tolist() == ["cheap", "big"]
    assert routes[routes.budget == 0.1].model.tolist() == ["cheap", "cheap"]


def test_unreachable_budget_publishes_the_cheapest_routing():
    psi = np.array([[0.5, 0.5], [0.1, 0.1]])
    tables = routing_tables(_router(psi, np.array([5.0, 10.0])), MODELS[:2], np.array([1, 3]))
    low = tables.budgets[(tables.budgets.grid == "budget") & (tables.budgets.budget == 0.1)].iloc[0]
    assert low.expected_cost == pytest.approx(0.5)  # the cheapest model costs half of the priciest


def test_a_pool_of_free_models_publishes_the_best_quality_routing_at_cost_zero():
    # self-hosted models logged at cost 0: no cost axis to normalise (this divided by zero in publish)
    tables = routing_tables(_router(costs=np.zeros(3)), MODELS, np.array([1, 1]))
    assert set(tables.routes.model) == {"big"} and (tables.budgets.expected_cost == 0).all()
    assert tables.budgets.expected_score.to_numpy() == pytest.approx(1 - 0.075)


def test_routing_tables_cover_the_grids_and_cost_falls_with_budget():
    tables = routing_tables(_router(), MODELS, np.array([1, 1]))
    assert len(tables.routes) == 2 * (len(BUDGETS) + len(NORMALISED_LAMBDAS))
    budgets = tables.budgets[tables.budgets.grid == "budget"]
    assert (budgets.expected_cost <= budgets.budget + 1e-9).all()
    assert budgets.expected_score.is_monotonic_increasing
    top = tables.routes[(tables.routes.grid == "budget") & (tables.routes.budget == 1.0)]
    assert top.model.tolist() == ["big", "big"]


def test_the_default_budget_is_the_cheapest_within_the_quality_tolerance():
    from uniroute.routers.tables import default_budget

    # cheap is within 0.005 of big on both clusters: the default routes everything to cheap, at a fraction of
    # the cost of always taking the best model.
    close = np.array([[0.305, 0.305], [0.5, 0.5], [0.30, 0.30]])
    budget, _, expected, best = default_budget(_router(close), MODELS)
    assert budget == 0.1 and best - expected <= 0.01
    tables = routing_tables(_router(close), MODELS, np.array([1, 1]))
    assert set(tables.routes[(tables.routes.grid == "budget") & (tables.routes.budget == budget)].model) == {"cheap"}
    # With a 0.05 gap on cluster 1 (0.025 on average) the default keeps big there: the cheapest budget that does.
    gap = np.array([[0.30, 0.35], [0.5, 0.5], [0.30, 0.30]])
    budget, _, expected, best = default_budget(_router(gap), MODELS)
    assert budget == 0.6 and best - expected <= 0.01
    assert default_budget(_router(gap), MODELS, tolerance=0.05)[0] == 0.1  # a looser tolerance saves more
    with pytest.raises(ValueError, match="tolerance"):
        default_budget(_router(gap), MODELS, tolerance=-1)


def test_routes_carry_the_ranked_fallbacks_of_the_same_terms():
    router = _router()
    tables = routing_tables(router, MODELS, np.array([1, 1]))
    routes = tables.routes.set_index(["grid", "budget", "cluster"])
    # Budget 1.0, lambda 0: cluster 0 big .05, cheap .1, mid .5; cluster 1 big .1, mid .5, cheap .9.
    assert routes.loc[("budget", 1.0, 0), "fallbacks"] == ["cheap", "mid"]
    assert routes.loc[("budget", 1.0, 1), "fallbacks"] == ["mid", "cheap"]
    for row in tables.routes.itertuples():
        assert row.model not in row.fallbacks and sorted([row.model, *row.fallbacks]) == sorted(MODELS)
        assert router.models[router.cluster_table(row.lam)[row.cluster]] == row.model
    narrowed = routing_tables(router, ("cheap", "big"), np.array([1, 1])).routes
    assert {len(f) for f in narrowed.fallbacks} == {1}
