"""Bradley-Terry per cluster: hand-checked counts, recovery of known strengths, the ridge, anchors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from uniroute.routers.cluster.bradley_terry import (
    anchor_strengths,
    battle_counts,
    counts_from_pairs,
    fit_strengths,
    log_likelihood,
)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def test_three_wins_in_four_give_odds_of_three_and_a_tie_counts_half() -> None:
    # a beats b three times, b beats a once: the MLE of P(a > b) is 3/4, so theta_a - theta_b = log 3; the
    # weak overall ridge centres the pair at 0.
    counts = battle_counts([0, 0, 0, 1], [1, 1, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0], 1, ["a", "b"])
    fit = fit_strengths(counts, prior=1e-9)
    assert counts.n[0, 0, 1] == counts.n[0, 1, 0] == 4
    assert counts.w[0, 0, 1] == 3 and counts.w[0, 1, 0] == 1
    assert fit.theta[0, 0] - fit.theta[0, 1] == pytest.approx(math.log(3), rel=2e-2)
    assert fit.theta[0].sum() == pytest.approx(0.0, abs=1e-9)
    # One win and two ties (arena convention: half a win each) is 2 of 3: odds 2.
    tied = battle_counts([0, 0, 1], [1, 1, 0], [1, 0.5, 0.5], [0, 0, 0], 1, ["a", "b"])
    assert tied.w[0, 0, 1] == 2.0
    assert fit_strengths(tied, prior=1e-9).theta[0, 0] * 2 == pytest.approx(math.log(2), rel=3e-2)


def test_counts_from_aggregated_rows_equal_counts_from_battles() -> None:
    a, b, y, cluster = [0, 1, 2, 0], [1, 0, 0, 2], [1.0, 0.25, 0.5, 0.0], [0, 0, 1, 1]
    one = battle_counts(a, b, y, cluster, 2, ["x", "y", "z"])
    # the same battles oriented and summed as the SQL group-by does: (cluster, a, b, n, w of a)
    two = counts_from_pairs([0, 1], [0, 0], [1, 2], [2, 2], [1.75, 0.5], 2, ["x", "y", "z"])
    assert np.array_equal(one.n, two.n) and np.allclose(one.w, two.w)
    assert np.allclose(one.w + one.w.transpose(0, 2, 1), one.n)


def _random_battles(rng: np.random.Generator, theta: np.ndarray, per_cluster: int, soft: bool = False):
    """Battles between random pairs in each cluster, outcomes drawn from Bradley-Terry at theta (K, M)."""
    k, m = theta.shape
    cluster = np.repeat(np.arange(k), per_cluster)
    a = rng.integers(0, m, len(cluster))
    b = (a + rng.integers(1, m, len(cluster))) % m  # never a itself
    p = _sigmoid(theta[cluster, a] - theta[cluster, b])
    y = p if soft else (rng.random(len(p)) < p).astype(float)
    return a, b, y, cluster


def test_recovers_known_strengths_within_a_tolerance_from_the_number_of_battles() -> None:
    rng = np.random.default_rng(7)
    k, m = 3, 6
    truth = rng.normal(0.0, 1.0, (k, m))
    truth -= truth.mean(axis=1, keepdims=True)  # the fit's ridges centre every cluster at 0
    counts = battle_counts(*_random_battles(rng, truth, 3000), k, [f"m{i}" for i in range(m)])
    fit = fit_strengths(counts, prior=1e-6)
    for c in range(k):
        # Standard errors of centred strengths: the pseudo-inverse of the Fisher information at the truth,
        # which shrinks as 1 / sqrt(battles).
        p = _sigmoid(truth[c][:, None] - truth[c][None, :])
        weight = counts.n[c] * p * (1 - p)
        information = np.diag(weight.sum(axis=1)) - weight
        se = np.sqrt(np.diag(np.linalg.pinv(information)))
        assert np.all(np.abs(fit.theta[c] - truth[c]) < 4.5 * se), (fit.theta[c] - truth[c]) / se
        assert se.max() < 0.1  # the tolerance is a tight one at 3,000 battles per cluster


def test_calibrated_judge_probabilities_recover_strengths_almost_exactly() -> None:
    rng = np.random.default_rng(3)
    truth = rng.normal(0.0, 1.5, (2, 5))
    truth -= truth.mean(axis=1, keepdims=True)
    counts = battle_counts(*_random_battles(rng, truth, 400, soft=True), 2, list("abcde"))
    fit = fit_strengths(counts, prior=1e-9)
    assert np.allclose(fit.theta, truth, atol=1e-4)
    assert np.allclose(fit.quality().T, _sigmoid(truth), atol=1e-4)


def test_a_model_with_few_battles_in_a_cluster_stays_near_its_overall_strength() -> None:
    # Cluster 0: "a" wins 80 of 100 battles; cluster 1: it fights once and loses; cluster 2: it loses ten
    # times; cluster 3: no battle.
    a = [0] * 111
    b = [1] * 111
    y = [1.0] * 80 + [0.0] * 31
    cluster = [0] * 100 + [1] + [2] * 10
    counts = battle_counts(a, b, y, cluster, 4, ["a", "b"])
    fit = fit_strengths(counts, prior=1.0)
    overall = fit.overall[0]
    assert fit.theta[3, 0] == pytest.approx(overall)  # no battle there: exactly the overall strength
    assert fit.theta[2, 0] < fit.theta[1, 0] < overall  # one loss moves it down, ten losses more so
    assert overall - fit.theta[1, 0] < (overall - fit.theta[2, 0]) / 2
    assert fit.theta[0, 0] > overall  # 100 battles speak for themselves
    assert fit.battles.tolist() == [[100, 100], [1, 1], [10, 10], [0, 0]]


def test_anchored_newcomer_is_fitted_against_frozen_strengths() -> None:
    rng = np.random.default_rng(11)
    k, m = 4, 5
    frozen = rng.normal(0.0, 1.0, (k, m - 1))
    new = np.array([1.2, -0.5, 0.3, 2.0])
    truth = np.column_stack([frozen, new])
    cluster = np.repeat(np.arange(k), 2000)
    a = np.full(len(cluster), m - 1)
    b = rng.integers(0, m - 1, len(cluster))
    y = (rng.random(len(cluster)) < _sigmoid(truth[cluster, a] - truth[cluster, b])).astype(float)
    names = [f"old{i}" for i in range(m - 1)] + ["new"]
    counts = battle_counts(a, b, y, cluster, k, names)
    fit = fit_strengths(counts, anchors={names[i]: frozen[:, i] for i in range(m - 1)}, prior=1e-6)
    assert np.array_equal(fit.theta[:, : m - 1], frozen)  # the pool is not refitted
    p = _sigmoid(new[:, None] - frozen)
    se = 1 / np.sqrt((counts.n[:, m - 1, : m - 1] * p * (1 - p)).sum(axis=1))
    assert np.all(np.abs(fit.theta[:, m - 1] - new) < 4.5 * se)
    assert fit.anchors == tuple(sorted(names[:-1]))


def test_anchor_strengths_are_clipped_logits() -> None:
    assert anchor_strengths(np.array([0.5, 0.75, 1.0, 0.0])).tolist() == pytest.approx(
        [0.0, math.log(3), math.log(999), -math.log(999)])


def test_log_likelihood_per_battle() -> None:
    counts = battle_counts([0, 0], [1, 1], [1.0, 0.0], [0, 0], 1, ["a", "b"])
    theta = np.array([[math.log(3), 0.0]])  # P(a > b) = 3/4
    assert log_likelihood(theta, counts) == pytest.approx((math.log(0.75) + math.log(0.25)) / 2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0], [0], [1.0], [0]), "cannot battle itself"),
        (([0], [1], [1.5], [0]), r"outcomes must lie in \[0, 1\]"),
        (([0], [2], [1.0], [0]), r"model indices must lie in \[0, 2\)"),
        (([0], [1], [1.0], [3]), r"cluster ids must lie in \[0, 1\)"),
    ],
)
def test_bad_battles_are_refused(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        battle_counts(*args, 1, ["a", "b"])


def test_given_overall_strengths_are_the_ridge_centre() -> None:
    # Two overlapping "neighbourhoods" of the same battle: pooled counts would double it; the given overall
    # strengths are used instead, and a neighbourhood without battles keeps them exactly.
    counts = battle_counts([0, 0], [1, 1], [1.0, 1.0], [0, 1], 3, ["a", "b"])
    fit = fit_strengths(counts, prior=1.0, overall=np.array([0.3, -0.3]))
    assert fit.overall.tolist() == [0.3, -0.3]
    assert fit.theta[2].tolist() == pytest.approx([0.3, -0.3])
    assert fit.theta[0, 0] > 0.3 and fit.theta[0, 0] == pytest.approx(fit.theta[1, 0])
