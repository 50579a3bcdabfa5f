"""--max-cost: the best expected quality whose expected mean cost on a prompt mix stays within a cap, from the
rows the routers expose (lambda_within_cost, what a replay calls) or from a router and prompts."""

from __future__ import annotations

import numpy as np
import pytest

from uniroute.routers.budgets.cost_cap import CostCapError, check_max_cost, lambda_for_max_cost, lambda_within_cost
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router

RNG = np.random.default_rng(7)
COSTS = np.array([1.0, 3.0, 10.0])
# Per prompt, each model's expected loss: the dear model is best, the cheap one worst, with prompt-level noise.
ROWS = np.clip(np.array([0.5, 0.3, 0.1]) + RNG.normal(0, 0.15, (400, 3)), 0, 1)


def _mean_cost(lam: float, rows: np.ndarray = ROWS) -> float:
    return float(COSTS[np.argmin(rows + lam * COSTS, axis=1)].mean())


def _mean_loss(lam: float, rows: np.ndarray = ROWS) -> float:
    return float(rows[np.arange(len(rows)), np.argmin(rows + lam * COSTS, axis=1)].mean())


@pytest.mark.parametrize("cap", [1.0, 1.5, 2.5, 4.0, 6.0, 9.99, 10.0, 50.0])
def test_the_cap_is_met_at_the_best_quality_the_rule_reaches_within_it(cap):
    lam = lambda_within_cost(ROWS, COSTS, cap)
    assert _mean_cost(lam) <= cap * (1 + 1e-12)
    # Any smaller lambda (better quality along the path) breaks the cap; none of a fine grid within it is better.
    if lam > 0:
        assert _mean_cost(lam * (1 - 1e-9)) > cap
    within = [g for g in np.linspace(0, 2, 2001) if _mean_cost(g) <= cap]
    assert _mean_loss(lam) <= min(_mean_loss(g) for g in within) + 1e-12


def test_weights_count_each_row_as_that_many_prompts():
    rows, counts = ROWS[:50], RNG.integers(1, 5, 50)
    assert lambda_within_cost(rows, COSTS, 4.0, counts) == lambda_within_cost(np.repeat(rows, counts, 0), COSTS, 4.0)


@pytest.mark.parametrize("cap", [-1.0, float("nan"), float("inf")])
def test_a_cap_that_is_not_a_cost_is_refused(cap):
    with pytest.raises(CostCapError, match="max cost must be a finite number >= 0"):
        check_max_cost(cap)


def test_a_cap_below_the_cheapest_model_is_refused_naming_it():
    router = Router("emb", ("a", "b"), np.array([4.0, 1.0]), np.array([[0.0, 0.0], [0.5, 0.5]]),
                    Centroids(np.array([[1, 0], [0, 1]], dtype=np.float32)))
    X = np.array([[0.9, 0.1], [0.1, 0.9]], dtype=np.float32)
    with pytest.raises(CostCapError, match=r"max cost 0.5 is below the cheapest pool model's cost 1 \(b\)"):
        lambda_for_max_cost(router, X, 0.5)
    with pytest.raises(CostCapError, match=r"below the cheapest pool model's cost 1 \(candidate 1\)"):
        lambda_within_cost(np.zeros((2, 2)), np.array([4.0, 1.0]), 0.5)
    assert lambda_for_max_cost(router, X, 1.0) > 0 and list(router.route(X, lambda_for_max_cost(router, X, 1.0))) \
        == [1, 1]
    assert lambda_for_max_cost(router, X, 4.0) == 0.0  # the dear, better model everywhere fits


def test_a_router_and_its_rows_agree_on_the_lambda():
    centers = np.eye(3, dtype=np.float32)
    psi = np.array([[0.5, 0.4, 0.6], [0.3, 0.2, 0.35], [0.1, 0.15, 0.05]])
    router = Router("emb", ("cheap", "mid", "dear"), COSTS, psi, Centroids(centers))
    X = np.repeat(centers, [50, 30, 20], axis=0)
    for cap in (1.0, 2.0, 5.0, 8.0):
        lam = lambda_for_max_cost(router, X, cap)
        assert float(COSTS[router.route(X, lam)].mean()) <= cap * (1 + 1e-12)
        assert lam == pytest.approx(lambda_within_cost(router.gamma(X), COSTS, cap), abs=1e-9)


def test_prompt_costs_check_the_cap_on_what_each_prompt_costs():
    # Long prompts (the first half) cost three times as much on every model: the one-cost cap overspends there.
    factor = np.where(np.arange(len(ROWS)) < 200, 3.0, 1.0)[:, None] / 2.0
    per_prompt = factor * COSTS
    for cap in (1.0, 2.5, 6.0):
        lam = lambda_within_cost(ROWS, COSTS, cap, prompt_costs=per_prompt)
        chosen = np.argmin(ROWS + lam * COSTS, axis=1)
        assert per_prompt[np.arange(len(ROWS)), chosen].mean() <= cap * (1 + 1e-12)
        if lam > 0:
            before = np.argmin(ROWS + lam * (1 - 1e-9) * COSTS, axis=1)
            assert per_prompt[np.arange(len(ROWS)), before].mean() > cap
    assert lambda_within_cost(ROWS, COSTS, 4.0, prompt_costs=np.broadcast_to(COSTS, ROWS.shape)) == \
        lambda_within_cost(ROWS, COSTS, 4.0)
    with pytest.raises(CostCapError, match="below the least expected mean cost"):
        lambda_within_cost(ROWS, COSTS, 0.9, prompt_costs=per_prompt * 2)
