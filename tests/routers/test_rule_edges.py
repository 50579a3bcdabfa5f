"""The routing rule's edges that the mutation run (make mutation) found untested: the default lambda, the
budget's bounds, an empty validation set, a pool whose models are all free, and a rule without clusters."""

from __future__ import annotations

import numpy as np
import pytest

from uniroute.routers.budgets.lambda_path import lambda_path
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.knn.neighbours import KnnRouter
from uniroute.routers.router import Router
from uniroute.routers.rule import check_budget, lambda_for_mean_cost

CENTERS = np.array([[1, 0], [0, 1]], dtype=np.float32)
X2 = np.array([[0.9, 0.1], [0.1, 0.9]], dtype=np.float32)
# a is better everywhere and four times dearer: lambda 1 routes everything to b.
PSI = np.array([[0.0, 0.0], [0.5, 0.5]])


def _router(costs=(4.0, 1.0)) -> Router:
    return Router("emb", ("a", "b"), np.asarray(costs, float), PSI, Centroids(CENTERS), np.full((2, 2), 10))


def test_route_without_lambda_is_lambda_zero():
    r = _router()
    assert list(r.route(X2)) == list(r.route(X2, 0.0)) == [0, 0]
    assert list(r.route(X2, 1.0)) == [1, 1]


@pytest.mark.parametrize("budget", [1.0, 0.5, 1e-9])
def test_budgets_in_zero_one_are_accepted(budget):
    assert check_budget(budget) == budget


@pytest.mark.parametrize("budget", [0.0, -0.1, 1.0 + 1e-9, 1.5, 2.0, float("nan"), float("inf")])
def test_budgets_outside_zero_one_are_refused(budget):
    with pytest.raises(ValueError, match=r"budget must be in \(0, 1\]"):
        check_budget(budget)


def test_an_empty_validation_set_cannot_turn_a_budget_into_lambda():
    with pytest.raises(ValueError, match="X_val is empty"):
        _router().lambda_for_budget(np.zeros((0, 2), np.float32), 0.5)


def test_one_validation_prompt_is_enough():
    assert _router().lambda_for_budget(X2[:1], 1.0) == 0.0


def test_a_budget_below_the_cheapest_model_names_the_least_reachable_fraction():
    with pytest.raises(ValueError, match=r"least achievable mean cost 1 \(fraction 0.25\)"):
        _router().lambda_for_budget(X2, 0.2)


def test_a_pool_of_free_models_meets_any_budget_at_lambda_zero():
    r = _router(costs=(0.0, 0.0))
    assert r.lambda_for_budget(X2, 0.5) == 0.0
    assert lambda_for_mean_cost(PSI.T.copy(), np.zeros(2), np.full(2, 0.5), 0.0) == (0.0, 0.0)


def test_a_target_of_zero_is_met_where_every_prompt_reaches_the_free_model():
    # gamma rows prefer the dear model; the free one is reached at lambda 0.5 (gap 0.5 over cost 1).
    rows, costs = np.array([[0.0, 0.5], [0.0, 0.5]]), np.array([1.0, 0.0])
    lam, least = lambda_for_mean_cost(rows, costs, np.array([0.5, 0.5]), 0.0)
    assert (lam, least) == (0.5, 0.0)


def test_a_rule_without_clusters_says_so():
    labels = np.array([[0.0, 1.0], [1.0, 0.0]])
    r = KnnRouter("emb", ("cheap", "dear"), np.array([1.0, 4.0]), labels, np.eye(2, dtype=np.float32),
                  ("p0", "p1"), 1)
    assert r.one_hot is False
    assert r.psi_centroids() is None and r.prompt_clusters(X2) is None
    table = r.psi_table()
    assert table.empty and list(table.columns) == ["model", "cluster", "loss", "n", "routing_loss", "error_lo",
                                                    "error_hi", "sparse"]


def test_a_target_at_the_least_reachable_cost_missed_by_an_ulp_is_the_last_event():
    # Found by search: the accumulated drops leave 5.6e-17 above the target 0 (the least reachable cost), so no
    # step meets it in floats; the answer is the last event, where every prompt reaches the free model.
    rows = np.array([[0.3361170605456604, 0.15027946689483906, 0.450339366649287],
                     [0.7963242702872942, 0.23064220899374743, 0.05202130106440961],
                     [0.4045518398215282, 0.19851304450925533, 0.0907530456191219]])
    costs = np.array([0.0, 0.1, 0.7])
    lam, least = lambda_for_mean_cost(rows, costs, np.full(3, 1 / 3), 0.0)
    assert least == 0.0
    assert lam == float(lambda_path(rows, costs).lam.max())


def test_a_rule_without_clusters_routes_without_lambda_as_lambda_zero():
    # K-NN routes through the generic RoutingRule.route (K-means routers have their own): dear is right on both
    # references, cheap on neither; lambda 1 makes cheap (1 + 1 = 2) beat dear (0 + 4).
    labels = np.array([[1.0, 1.0], [0.0, 0.0]])
    r = KnnRouter("emb", ("cheap", "dear"), np.array([1.0, 4.0]), labels, np.eye(2, dtype=np.float32),
                  ("p0", "p1"), 1)
    X = np.eye(2, dtype=np.float32)
    assert list(r.route(X)) == list(r.route(X, 0.0)) == [1, 1]
    assert list(r.route(X, 1.0)) == [0, 0]
