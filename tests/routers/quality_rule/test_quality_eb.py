"""The quality-only rule's empirical-Bayes decision (routers/quality_rule/empirical_bayes.py): a cluster leaves the
overall best only as far as the pool's own validation answers show per-cluster differences beyond noise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from uniroute.routers.quality_rule.empirical_bayes import cell_moments, eb_cells, eb_strength, fit_eb_rule


def eb_pool() -> tuple[np.ndarray, np.ndarray]:
    """(clusters (160,), losses (160, 3)): four clusters of 40 validation prompts, three models.

    m0 is best overall (loss 0.3 in every cluster); m1 is 0.5 except in cluster 0, where it is one prompt ahead
    of m0 (0.275): noise, which the per-cluster argmin follows. m2 is 0.5 except in cluster 3, where it never errs
    (against m0's 0.3): a real specialist."""
    n = 40
    clusters = np.repeat(np.arange(4), n)
    losses = np.zeros((4 * n, 3))
    for c in range(4):
        losses[c * n: c * n + 12, 0] = 1.0
        losses[c * n + 12: c * n + 32, 1] = 1.0
        losses[c * n + 20: c * n + 40, 2] = 1.0
    losses[0:n, 1] = 0.0
    losses[15:26, 1] = 1.0
    losses[3 * n:, 2] = 0.0
    return clusters, losses


def test_noise_keeps_the_overall_best_and_a_real_specialist_takes_its_cluster() -> None:
    clusters, losses = eb_pool()
    means, _, _ = cell_moments(clusters, losses, 4)
    assert means.argmin(axis=0).tolist() == [1, 0, 0, 2]  # what K-means' argmin at equal costs serves
    rule = fit_eb_rule(clusters, losses, 4)
    assert rule.best == 0 and rule.choice.tolist() == [0, 0, 0, 2]
    assert rule.switched.tolist() == [False, False, False, True]
    assert np.isnan(rule.p_values).all()  # no test is run: a strength in a p-value's place would read as one
    assert 0 < eb_cells(clusters, losses, 4)[2] < math.inf  # the strength the pool's answers gave


def test_cells_that_vary_no_more_than_their_noise_keep_the_overall_best_everywhere() -> None:
    rng = np.random.default_rng(0)
    clusters = np.repeat(np.arange(6), 50)
    losses = (rng.random((300, 4)) < np.array([0.3, 0.32, 0.34, 0.36])).astype(float)
    means, counts, var = cell_moments(clusters, losses, 6)
    assert eb_strength(means, counts, var) == math.inf
    assert (means.argmin(axis=0) != 0).any()  # the argmin follows noise somewhere
    rule = fit_eb_rule(clusters, losses, 6)
    assert rule.choice.tolist() == [rule.best] * 6 and rule.best == int(np.argmin(losses.mean(axis=0)))


def test_strong_specialists_give_a_small_strength_and_the_argmin_stands() -> None:
    clusters = np.repeat(np.arange(3), 40)
    losses = np.ones((120, 3))
    for m in range(3):
        losses[clusters == m, m] = 0.0  # each model the only one right in its cluster
    losses[0, 0] = 1.0  # m0 slightly worse overall: m1 and m2 tie, m1 is the overall best
    rule = fit_eb_rule(clusters, losses, 3)
    assert rule.choice.tolist() == [0, 1, 2]


def test_moments_count_only_answered_prompts() -> None:
    clusters = np.array([0, 0, 0, 1])
    losses = np.array([[1.0, np.nan], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    means, counts, var = cell_moments(clusters, losses, 2)
    assert counts.tolist() == [[3, 1], [2, 1]]
    np.testing.assert_allclose(means, [[2 / 3, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(var, [[1 / 3, 0.0], [0.0, 0.0]])


def test_an_empty_cluster_and_a_tie_keep_the_overall_best() -> None:
    clusters = np.repeat([0, 1], 20)
    losses = np.zeros((40, 2))
    losses[20:, 0] = 1.0  # m1 best overall; cluster 0: both never err (a tie), and no cell varies: strength 0
    means, counts, var = cell_moments(clusters, losses, 3)
    assert eb_strength(means, counts, var) == 0.0
    rule = fit_eb_rule(clusters, losses, 3)  # cluster 2 has no validation prompt
    assert rule.best == 1 and rule.choice.tolist() == [1, 1, 1]


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="cluster labels"):
        fit_eb_rule(np.zeros(3, dtype=int), np.zeros((4, 2)), 1)
    with pytest.raises(ValueError, match="at least one validation label"):
        fit_eb_rule(np.zeros(2, dtype=int), np.array([[0.0, np.nan], [1.0, np.nan]]), 1)


def test_a_domain_specialist_the_fine_cells_shrink_away_is_kept_through_the_coarse_level() -> None:
    """Two domains (coarse clusters) of five fine clusters of 30 prompts: m1 is better in domain 1 (0.3 against
    m0's 0.45), worse in domain 0. One strength over the ten fine cells shrinks that away; the coarse cells, 150
    prompts each, see it, and the fine cells lean on them."""
    rng = np.random.default_rng(2)
    fine = np.repeat(np.arange(10), 30)
    coarse = (fine >= 5).astype(np.int64)
    p = np.where(coarse[:, None] == 1, [0.45, 0.3, 0.6], [0.35, 0.55, 0.6])
    losses = (rng.random((300, 3)) < p).astype(float)
    assert fit_eb_rule(fine, losses, 10).choice.tolist() == [0] * 10
    assert fit_eb_rule(fine, losses, 10, coarse, 2).choice.tolist() == [0] * 5 + [1] * 5


def test_fine_clusters_no_finer_than_the_coarse_ones_route_by_the_coarse_cells() -> None:
    clusters, losses = eb_pool()
    assert fit_eb_rule(clusters, losses, 4, clusters, 4).choice.tolist() == [0, 0, 0, 2]


def test_a_cluster_without_validation_prompts_keeps_the_overall_best_even_where_the_prior_leans_elsewhere() -> None:
    """m1 is best by its mean validation loss (0 on its 2 answers); the prior, weighing evidence, leans to m0
    (0.1 on 40 answers): a cluster nobody answered in still goes to the overall best."""
    clusters = np.zeros(40, dtype=np.int64)
    losses = np.full((40, 3), np.nan)
    losses[:, 0] = 0.0
    losses[:4, 0] = 1.0
    losses[:2, 1] = 0.0
    losses[:, 2] = 1.0
    rule = fit_eb_rule(clusters, losses, 2)
    assert rule.best == 1 and rule.choice[1] == 1
