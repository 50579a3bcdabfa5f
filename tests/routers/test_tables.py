
import numpy as np
import pandas as pd
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


def _lambda_0_cost(router, pool=MODELS) -> float:
    budgets = routing_tables(router, pool).budgets
    return float(budgets[(budgets.grid == "lambda") & (budgets.lam == 0.0)].expected_cost.iloc[0])


def test_the_default_keeps_the_share_of_the_gain_it_is_asked_to():
    from uniroute.routers.tables import cheapest_setting_score, default_budget

    # A 0.05 gap on cluster 1: cheap everywhere scores 0.675, big everywhere 0.70 (the gain: 0.025). Keeping 90% of it
    # (0.6975) needs big on cluster 1: cheap on cluster 0 and big on cluster 1 cost (1 + 10) / 2 / 10 = 0.55 of big,
    # budget 0.6's routing; keeping none of it routes everything to cheap, budget 0.1.
    gap = np.array([[0.30, 0.35], [0.5, 0.5], [0.30, 0.30]])
    assert cheapest_setting_score(_router(gap), MODELS) == pytest.approx(0.675)
    budget, _, expected, best = default_budget(_router(gap), MODELS)
    assert (budget, expected, best) == (0.6, pytest.approx(0.70), pytest.approx(0.70))
    tables = routing_tables(_router(gap), MODELS, np.array([1, 1]))
    assert tables.routes[(tables.routes.grid == "budget") & (tables.routes.budget == 0.6)].model.tolist() == [
        "cheap", "big"]
    budget, _, expected, _ = default_budget(_router(gap), MODELS, keep=0.0)
    assert (budget, expected) == (0.1, pytest.approx(0.675))
    with pytest.raises(ValueError, match="share of the gain"):
        default_budget(_router(gap), MODELS, keep=1.5)
    with pytest.raises(ValueError, match="share of the gain"):
        default_budget(_router(gap), MODELS, keep=float("nan"))


def test_the_default_keeps_most_of_the_gain_when_the_best_leads_everywhere():
    from uniroute.routers.tables import cheapest_setting_score, default_budget

    # big (cost 10) leads mid (cost 2) by 0.02 on every cluster, cheap (cost 1) is far behind: the gain from the
    # cheapest setting (0.40) to the best (0.80) is 0.40, and mid keeps 0.38 of it (95%) at a fifth of big's cost.
    lead = np.array([[0.6, 0.6], [0.22, 0.22], [0.2, 0.2]])
    assert cheapest_setting_score(_router(lead), MODELS) == pytest.approx(0.40)
    budget, _, expected, best = default_budget(_router(lead), MODELS)
    assert (budget, expected, best) == (0.2, pytest.approx(0.78), pytest.approx(0.80))
    # Within 0.01 of the best (the rule before) found nothing cheaper than big everywhere, lambda 0's cost.
    assert default_budget(_router(lead), MODELS, keep=1.0)[0] == 1.0 == _lambda_0_cost(_router(lead))


@pytest.mark.parametrize("lead", [0.011, 0.02, 0.05])
def test_the_default_costs_less_than_lambda_0_when_a_cheaper_model_is_within_reach(lead: float):
    from uniroute.routers.tables import default_budget

    # mid is behind big by `lead` on every cluster, cheap by 0.5 and 0.6: the gain is 0.55, and mid keeps more than
    # 90% of it (a lead of 0.1 would keep 82%: out of reach, big everywhere).
    psi = np.array([[0.6, 0.7], [0.1 + lead, 0.1 + lead], [0.1, 0.1]])
    router = _router(psi)
    budget, lam, expected, best = default_budget(router, MODELS)
    budgets = routing_tables(router, MODELS).budgets
    cost = float(budgets[budgets.lam == lam].expected_cost.iloc[0])
    assert cost < _lambda_0_cost(router) and cost == pytest.approx(0.2) and expected == pytest.approx(0.9 - lead)


def test_the_default_is_lambda_0_when_nothing_cheaper_keeps_most_of_the_quality():
    from uniroute.routers.tables import default_budget

    # Two models: cheap scores 0.4, big 0.8 everywhere. Any saving gives up the whole gain: big everywhere.
    psi = np.array([[0.6, 0.6], [0.2, 0.2]])
    router = _router(psi, np.array([1.0, 10.0]))
    assert default_budget(router, MODELS[:2])[:3] == (1.0, 0.0, pytest.approx(0.8))
    assert _lambda_0_cost(router, MODELS[:2]) == 1.0


def test_a_default_between_budget_rows_is_the_cheaper_lambda_row_named_by_its_cost():
    from uniroute.routers.tables import default_budget

    # Every model costs within a tenth of the priciest (9 and 10): no budget row between "the cheapest" (0.9) and
    # "the best" (1.0). cheap is behind big by 0.2 on cluster 0 and 0.001 on cluster 1: the gain is 0.1005, and
    # cheap on cluster 1 keeps 99% of it at an expected cost of (10 + 9) / 2 / 10 = 0.95, a lambda row.
    psi = np.array([[0.3, 0.101], [0.1, 0.1]])
    router = _router(psi, np.array([9.0, 10.0]))
    budget, lam, expected, best = default_budget(router, MODELS[:2])
    assert budget == pytest.approx(0.95) and expected == pytest.approx(0.9 - 0.0005) and best == pytest.approx(0.9)
    assert lam > 0 and list(router.cluster_table(lam, MODELS[:2])) == [1, 0]


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


@pytest.mark.parametrize("pool", [MODELS, MODELS[:2], ("cheap", "big")])
def test_the_budget_rows_alone_are_the_routing_tables_budget_rows(pool):
    from uniroute.routers.tables import budget_rows

    router = Router("emb", MODELS, COSTS, PSI, Centroids(np.eye(2, 3, dtype=np.float32)),
                    psi_counts=np.array([[3, 40], [12, 40], [20, 40]]))  # clusters weighted by their prompts
    router = router.with_floor("cheap", np.array([0.3, 0.0]))  # a gated cell counts in both alike
    pd.testing.assert_frame_equal(budget_rows(router, pool), routing_tables(router, pool).budgets)
