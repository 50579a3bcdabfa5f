"""The rule's path over lambda, and its two consumers (budget calibration and deferral curves), against a brute-force
argmin over a dense lambda grid on random cases (ties, repeated rows, float32 gamma)."""

import numpy as np
import pytest

from uniroute.routers.budgets.lambda_path import argmin_cheapest, lambda_path
from uniroute.routers.rule import lambda_for_mean_cost
from uniroute.selection.curves import lambda_grid, routed_points

COST_CHOICES = np.array([0.1, 0.3, 0.3, 0.5, 1.0, 2.0])  # equal costs occur: ties go to the lower index


def _brute_choice(gamma: np.ndarray, costs: np.ndarray, lam: float) -> np.ndarray:
    """(n,) argmin over models of gamma + lam * costs with the contract's tie rule, one row at a time."""
    val = gamma + lam * costs
    m = costs.size
    return np.array([min(range(m), key=lambda k, r=r: (val[r, k], costs[k], k)) for r in range(gamma.shape[0])])


def _case(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 40)), int(rng.integers(1, 7))
    costs = rng.choice(COST_CHOICES, m) if seed % 2 else rng.uniform(0.05, 1.0, m)
    # Cluster-like (few distinct rows, repeated: the grouped walk) or rounded (exact ties at lambda 0 occur).
    clustered = rng.integers(0, 5, (3, m))[rng.integers(0, 3, n)] / 4
    gamma = clustered if seed % 3 == 0 else rng.random((n, m)).round(1)
    if seed % 4 == 1:
        gamma = gamma.astype(np.float32)  # the budget path keeps the kinds' dtype
    return gamma, costs


def _grid_away_from(events: np.ndarray, grid: np.ndarray | None = None) -> np.ndarray:
    """grid (default: 0 plus a dense log grid) without points within a relative 1e-7 of a switch (float ties are
    fragile there)."""
    if grid is None:
        grid = np.concatenate([[0.0], np.geomspace(1e-4, 1e4, 1500), [1e6, 1e9, 1e12]])
    if events.size:
        near = np.abs(grid[:, None] - events[None, :]) <= 1e-7 * np.maximum(events[None, :], 1e-12)
        grid = grid[~near.any(axis=1)]
    return grid


@pytest.mark.parametrize("seed", range(24))
def test_path_matches_brute_force_argmin_on_a_dense_grid(seed: int) -> None:
    gamma, costs = _case(seed)
    path = lambda_path(gamma, costs)
    n = gamma.shape[0]
    assert np.array_equal(path.start, argmin_cheapest(gamma, costs, np.arange(costs.size)))
    assert np.all(np.diff(path.lam) >= 0) and np.all(costs[path.new] < costs[path.old])
    for lam in _grid_away_from(path.lam):
        chosen = path.start.copy()
        for r, new in zip(path.row[path.lam <= lam], path.new[path.lam <= lam], strict=True):
            chosen[r] = new
        assert np.array_equal(chosen, _brute_choice(gamma, costs, lam)), lam
    assert np.array_equal(path.end, _brute_choice(gamma, costs, 1e9)) or n == 0


@pytest.mark.parametrize("seed", range(24))
def test_budget_lambda_is_the_smallest_on_a_dense_grid_that_meets_the_budget(seed: int) -> None:
    gamma, costs = _case(seed)
    rng = np.random.default_rng(100 + seed)
    weights = rng.random(gamma.shape[0])
    weights /= weights.sum()
    dense = _grid_away_from(lambda_path(gamma, costs).lam)
    mean_cost = np.array([weights @ costs[_brute_choice(gamma, costs, lam)] for lam in dense])
    for target in rng.uniform(costs.min(), costs.max(), 6):
        lam, reached = lambda_for_mean_cost(gamma, costs, weights, target)
        if lam is None:  # reached: the least reachable mean cost, above the target
            assert reached == pytest.approx(mean_cost[-1], abs=1e-12) and mean_cost[-1] > target
            continue
        assert lam > 0 or reached == pytest.approx(mean_cost[0], abs=1e-12)  # lambda 0: its own mean cost
        # Every grid lambda below the answer exceeds the target; every one above meets it.
        assert (mean_cost[dense < lam] > target * (1 + 1e-12)).all()
        assert (mean_cost[dense > lam] <= target * (1 + 1e-9)).all()


@pytest.mark.parametrize("seed", range(12))
def test_curve_points_match_brute_force_argmin(seed: int) -> None:
    gamma, costs = _case(seed)
    gamma = gamma.astype(np.float64)
    rng = np.random.default_rng(200 + seed)
    n, m = gamma.shape
    scores = (rng.random((n, m)) > 0.4).astype(float)
    prompt_costs = costs * rng.uniform(0.5, 1.5, (n, m))
    path = lambda_path(gamma, costs)
    lams = lambda_grid(path, 64)
    cost, score = routed_points(gamma, costs, scores, prompt_costs, n_lambdas=64)
    # Each grid lambda's point is the brute-force routing's mean (grid lambdas on a switch are left out: there the
    # brute force's float tie is fragile, while the path applies the switch exactly).
    checked = 0
    for lam, c, s in zip(lams, cost, score, strict=True):
        if lam in _grid_away_from(path.lam, np.array([lam])):
            chosen = _brute_choice(gamma, costs, lam)
            assert s == pytest.approx(scores[np.arange(n), chosen].mean(), abs=1e-12)
            assert c == pytest.approx(prompt_costs[np.arange(n), chosen].mean(), abs=1e-12)
            checked += 1
    assert checked >= 1
