"""Routing tables' edges the mutation run (make mutation) found untested: the published grids themselves, the
cheapest lambda, cluster weights that are missing, zero or negative, a router without clusters, and a
default that keeps all of the gain."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.knn.neighbours import KnnRouter
from uniroute.routers.router import Router
from uniroute.routers.tables import (
    _cheapest_lambda,
    default_budget,
    routing_tables,
    validation_proxy,
    validation_weights,
)

PSI = np.array([[0.1, 0.9], [0.5, 0.5], [0.05, 0.1]])  # (M, K) losses
COSTS = np.array([1.0, 2.0, 4.0])
MODELS = ("cheap", "mid", "big")
# Gateways read these grids from every snapshot: they are a published contract, written out here.
PUBLISHED_BUDGETS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
PUBLISHED_LAMBDAS = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0]


def _router(costs=COSTS, counts=None) -> Router:
    return Router("emb", MODELS, np.asarray(costs, float), PSI, Centroids(np.eye(2, 3, dtype=np.float32)), counts)


def test_the_grids_are_the_published_budgets_and_lambdas_in_units_of_the_priciest_model():
    budgets = routing_tables(_router(), MODELS, np.array([1, 1])).budgets
    assert budgets[budgets.grid == "budget"].budget.tolist() == PUBLISHED_BUDGETS
    assert budgets[budgets.grid == "lambda"].lam.tolist() == pytest.approx([x / 4.0 for x in PUBLISHED_LAMBDAS])


def test_a_free_pool_publishes_the_lambda_grid_as_is():
    budgets = routing_tables(_router(costs=np.zeros(3)), MODELS, np.array([1, 1])).budgets
    assert budgets[budgets.grid == "lambda"].lam.tolist() == PUBLISHED_LAMBDAS


def test_the_cheapest_lambda_is_past_every_switch():
    assert _cheapest_lambda(np.array([0.5, 1.0, 3.0])) == 4.0  # 2 / the smallest gap (0.5)
    assert _cheapest_lambda(np.array([2.0, 2.0])) == 0.0  # one cost: nothing to switch to
    r = _router()
    assert set(r.cluster_table(_cheapest_lambda(COSTS), MODELS)) == {0}


def test_validation_weights_are_the_largest_count_per_cluster():
    counts = np.array([[3, 1], [7, 0], [2, 5]])
    assert validation_weights(_router(counts=counts)).tolist() == [7, 5]
    assert validation_weights(_router()).tolist() == [1, 1]  # no counts: one prompt per cluster


def test_the_validation_proxy_is_the_routers_budget_reference():
    r = _router(counts=np.array([[3, 1], [7, 0], [2, 5]]))
    assert np.array_equal(validation_proxy(r), r.budget_reference())


def test_cluster_weights_below_zero_count_as_zero_and_all_zero_as_equal():
    def budgets(weights):
        return routing_tables(_router(), MODELS, np.array(weights)).budgets

    pd.testing.assert_frame_equal(budgets([-3, 2]), budgets([0, 5]))
    pd.testing.assert_frame_equal(budgets([0, 1]), budgets([0, 5]))
    pd.testing.assert_frame_equal(budgets([0, 0]), budgets([4, 4]))
    assert not budgets([0, 5]).equals(budgets([1, 1]))


def test_a_router_without_clusters_weighs_its_reference_prompts_equally():
    # K-NN over two references; labels are losses: cheap is right on p0 only, mid on neither, big on both.
    labels = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    # Two references in three dimensions: the share is per prompt (1/2), not per dimension.
    r = KnnRouter("emb", MODELS, COSTS, labels, np.eye(2, 3, dtype=np.float32), ("p0", "p1"), 1)
    tables = routing_tables(r, MODELS)
    assert tables.routes.empty
    top = tables.budgets[(tables.budgets.grid == "lambda") & (tables.budgets.lam == 0.0)].iloc[0]
    # lambda 0: p0 to cheap (tied with big, the cheaper wins), p1 to big; each prompt weighs 1/2.
    assert top.expected_score == pytest.approx(1.0) and top.expected_cost == pytest.approx((1 + 4) / 2 / 4)
    # Budget 0.1 is below the cheapest model (0.25): everything to cheap, right on p0 only.
    cheap_everywhere = tables.budgets[(tables.budgets.grid == "budget") & (tables.budgets.budget == 0.1)].iloc[0]
    assert cheap_everywhere.expected_cost == pytest.approx(0.25)
    assert cheap_everywhere.expected_score == pytest.approx(0.5)


def test_keeping_all_the_gain_takes_the_cheapest_budget_with_the_best_score():
    budget, _, expected, best = default_budget(_router(), MODELS, keep=1.0)
    assert expected == best
    budgets = routing_tables(_router(), MODELS).budgets
    at_best = budgets[(budgets.grid == "budget") & (budgets.expected_score == best)]
    assert budget == at_best.budget.min()
    with pytest.raises(ValueError, match="share of the gain"):
        default_budget(_router(), MODELS, keep=-0.01)
