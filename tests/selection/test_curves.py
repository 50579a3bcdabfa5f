"""Evaluation protocol and metrics: hand-checked curve fixtures, the sign test, the trial pipeline."""

from __future__ import annotations

import math

import numpy as np
import pytest

from uniroute.selection.curves import (
    Curve,
    curve_area,
    curve_metrics,
    lambda_grid,
    reach_cost,
    routed_points,
    switch_path,
    upper_envelope,
)

# ---- curve envelope, interpolation, Area, QNC on a hand-checked fixture -------------------------------------
# Points (cost, score): (0.5, 0.4) is dominated by (0.2, 0.5); (0.8, 0.7) by (0.5, 0.7); (0.5, 0.7) beats
# (0.5, 0.4) at equal cost. The envelope is (0.2, 0.5) - (0.5, 0.7) - (1.0, 0.9).
POINTS_COST = [0.5, 0.2, 0.8, 1.0, 0.5]
POINTS_SCORE = [0.4, 0.5, 0.7, 0.9, 0.7]


@pytest.fixture
def curve() -> Curve:
    return upper_envelope(np.array(POINTS_COST), np.array(POINTS_SCORE))


def test_envelope_drops_dominated_points(curve: Curve) -> None:
    np.testing.assert_array_equal(curve.cost, [0.2, 0.5, 1.0])
    np.testing.assert_array_equal(curve.score, [0.5, 0.7, 0.9])


def test_envelope_of_one_point_and_equal_scores() -> None:
    single = upper_envelope(np.array([0.3]), np.array([0.6]))
    assert single.cost.tolist() == [0.3] and single.score.tolist() == [0.6]
    flat = upper_envelope(np.array([0.6, 0.3, 0.9]), np.array([0.5, 0.5, 0.5]))  # equal scores: cheapest only
    assert flat.cost.tolist() == [0.3] and flat.score.tolist() == [0.5]


def test_interpolation_is_linear_and_constant_beyond_the_ends(curve: Curve) -> None:
    np.testing.assert_allclose(curve.at(np.array([0.0, 0.2, 0.35, 0.5, 0.75, 1.0, 1.3])),
                               [0.5, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9])


def test_area_and_area50(curve: Curve) -> None:
    # [0, 0.2] flat at 0.5: 0.1; [0.2, 0.5] trapezoid (0.5 + 0.7) / 2 * 0.3 = 0.18; [0.5, 1] (0.7 + 0.9) / 2 * 0.5 = 0.4
    assert curve_area(curve) == pytest.approx(0.68)
    assert curve_area(curve, 0.0, 0.5) == pytest.approx(0.28)
    # a window that cuts a segment in the middle: [0.35, 0.75] = (0.6 + 0.7)/2 * 0.15 + (0.7 + 0.8)/2 * 0.25
    assert curve_area(curve, 0.35, 0.75) == pytest.approx(0.0975 + 0.1875)


def test_area_counts_a_curve_that_extends_beyond_cost_one_only_up_to_one() -> None:
    c = upper_envelope(np.array([0.5, 1.5]), np.array([0.5, 1.0]))  # at cost 1: 0.75
    assert curve_area(c) == pytest.approx(0.25 + (0.5 + 0.75) / 2 * 0.5)


def test_qnc_interpolated_at_vertex_never_and_at_first_point(curve: Curve) -> None:
    # interpolated: 0.8 is reached half-way between 0.5 and 1.0; the best LLM costs 1.0
    assert curve_metrics(curve, best_score=0.8, best_cost=1.0)["qnc"] == pytest.approx(0.75)
    # exactly at a vertex, relative to a best LLM at cost 0.5
    assert curve_metrics(curve, best_score=0.7, best_cost=0.5)["qnc"] == pytest.approx(1.0)
    # never reached
    assert math.isinf(curve_metrics(curve, best_score=0.95, best_cost=1.0)["qnc"])
    # already reached by the cheapest point: its cost, not the flat extrapolation to 0
    assert reach_cost(curve, 0.4) == pytest.approx(0.2)


def test_qnc_is_undefined_not_an_error_when_the_best_llm_is_free(curve: Curve) -> None:
    m = curve_metrics(curve, best_score=0.8, best_cost=0.0)
    assert math.isnan(m["qnc"]) and m["area"] == pytest.approx(0.68)


def test_peak_and_area_in_metrics(curve: Curve) -> None:
    m = curve_metrics(curve, best_score=0.8, best_cost=1.0)
    assert m["peak"] == pytest.approx(0.9)
    assert m["area"] == pytest.approx(0.68) and m["area50"] == pytest.approx(0.28)


def test_envelope_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        upper_envelope(np.array([]), np.array([]))
    with pytest.raises(ValueError, match="finite"):
        upper_envelope(np.array([0.1, np.nan]), np.array([0.1, 0.2]))


# ---- routing along lambda ---------------------------------------------------------------------------------
def test_routed_points_on_a_two_prompt_fixture() -> None:
    # Two models: A cheap (cost 0.2), B expensive (1.0). gamma: prompt 0 prefers B by 0.4, prompt 1 by 0.1.
    # Switch to A at lambda = 0.4 / 0.8 = 0.5 (prompt 0) and 0.1 / 0.8 = 0.125 (prompt 1).
    gamma = np.array([[0.6, 0.2], [0.5, 0.4]])
    costs = np.array([0.2, 1.0])
    scores = np.array([[0.0, 1.0], [1.0, 1.0]])
    prompt_costs = np.array([[0.2, 1.0], [0.2, 1.0]])
    path = switch_path(gamma, costs)
    assert path.start.tolist() == [1, 1]
    np.testing.assert_allclose(path.lam, [0.125, 0.5])
    assert path.row.tolist() == [1, 0] and path.new.tolist() == [0, 0]
    grid = lambda_grid(path, n_lambdas=5)
    assert grid[0] == 0 and grid[1] == pytest.approx(0.125) and grid[-1] == pytest.approx(0.5)
    cost, score = routed_points(gamma, costs, scores, prompt_costs, n_lambdas=5)
    # lambda 0: both on B (cost 1, score 1); after 0.125: prompt 1 on A (cost 0.6, score 1); after 0.5: both on A
    assert (cost[0], score[0]) == pytest.approx((1.0, 1.0))
    assert (cost[1], score[1]) == pytest.approx((0.6, 1.0))
    assert (cost[-1], score[-1]) == pytest.approx((0.2, 0.5))
    env = upper_envelope(cost, score)
    np.testing.assert_allclose(env.cost, [0.2, 0.6])
    np.testing.assert_allclose(env.score, [0.5, 1.0])


def test_ties_go_to_the_cheaper_model() -> None:
    gamma = np.array([[0.3, 0.3, 0.3]])
    costs = np.array([0.5, 0.1, 0.1])  # models 1 and 2 equally cheap: the lower index wins
    path = switch_path(gamma, costs)
    assert path.start.tolist() == [1] and path.lam.size == 0
    assert lambda_grid(path).tolist() == [0.0]


def test_repeated_gamma_rows_walk_once_with_the_events_of_walking_every_row() -> None:
    # Cluster routers give every prompt of a cluster the same gamma row; the path walks each distinct row once.
    # Its events must be exactly (same order, same floats) those of walking every prompt, ties included.
    from uniroute.routers.budgets.lambda_path import _row_groups, _switch_steps

    rng = np.random.default_rng(5)
    psi = rng.integers(0, 4, (7, 5)) / 4  # few values: equal crossings across clusters occur
    gamma = psi[rng.integers(0, 7, 300)]
    costs = np.array([0.1, 0.3, 0.3, 0.6, 1.0])
    assert _row_groups(gamma) is not None and _row_groups(rng.random((300, 5))) is None
    path = switch_path(gamma, costs)
    start, steps = _switch_steps(gamma, costs)
    row, lam, old, new = (np.concatenate(a) for a in zip(*steps, strict=True))
    order = np.argsort(lam, kind="stable")
    assert np.array_equal(path.start, start)
    for got, want in ((path.row, row), (path.lam, lam), (path.old, old), (path.new, new)):
        assert np.array_equal(got, want[order])


def test_routed_points_match_brute_force_argmin_on_random_data() -> None:
    rng = np.random.default_rng(3)
    n, m = 60, 6
    gamma = rng.random((n, m)).round(2)  # rounded: exact ties occur
    costs = np.array([0.1, 0.3, 0.3, 0.5, 0.8, 1.0])
    scores = (rng.random((n, m)) > 0.4).astype(float)
    prompt_costs = costs * rng.uniform(0.5, 1.5, (n, m))
    cost, score = routed_points(gamma, costs, scores, prompt_costs, n_lambdas=200)
    lams = lambda_grid(switch_path(gamma, costs), 200)
    assert lams.size == 201
    for j, lam in enumerate(lams):
        val = gamma + lam * costs
        # brute force with the contract's tie rule: smallest value, then cheaper, then lower index
        choice = np.array([min(range(m), key=lambda k, r=r: (val[r, k], costs[k], k)) for r in range(n)])
        assert score[j] == pytest.approx(scores[np.arange(n), choice].mean(), abs=1e-12)
        assert cost[j] == pytest.approx(prompt_costs[np.arange(n), choice].mean(), abs=1e-12)
    # the grid spans the best-quality routing (lambda 0) and the cheapest one (every prompt on model 0)
    assert cost[-1] == pytest.approx(prompt_costs[:, 0].mean())


def test_curve_points_are_those_of_the_products_router() -> None:
    """The evaluation's routing along lambda is Router.route's rule (costs scaled by C, lambda by 1/C)."""
    from uniroute.routers.cluster.kmeans import Centroids
    from uniroute.routers.router import Router

    rng = np.random.default_rng(7)
    centers = rng.standard_normal((5, 8)).astype(np.float32)
    psi = rng.random((4, 5)).round(1)  # rounded: clusters tie between models
    costs = np.array([2.0, 0.5, 8.0, 0.5])
    router = Router(embedder_id="test", models=("a", "b", "c", "d"), costs=costs, psi=psi,
                    assigner=Centroids(centers=centers))
    X = rng.standard_normal((40, 8)).astype(np.float32)
    scores = (rng.random((40, 4)) > 0.5).astype(float)
    norm = costs.max()
    gamma = router.gamma(X)
    cost, score = routed_points(gamma, costs / norm, scores, np.tile(costs / norm, (40, 1)), n_lambdas=50)
    for lam, c, s in zip(lambda_grid(switch_path(gamma, costs / norm), 50), cost, score, strict=True):
        chosen = router.route(X, lam / norm)
        assert s == pytest.approx(scores[np.arange(40), chosen].mean())
        assert c == pytest.approx(costs[chosen].mean() / norm)
