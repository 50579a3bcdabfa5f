"""The quality-only rule: the overall best model, and a cluster switched only on a significant paired advantage."""

from __future__ import annotations

import numpy as np
import pytest

from uniroute.routers.quality_rule.switches import fit_quality_rule, one_sided_sign_p, rule_gamma


def _losses() -> tuple[np.ndarray, np.ndarray]:
    """Three models, two clusters of 20 validation prompts each.

    Model 0 is best overall. In cluster 0, model 1 wins 3 prompts and loses 1 against model 0 (not significant);
    in cluster 1, model 2 wins 12 prompts and loses none (one-sided p = 2**-12)."""
    clusters = np.repeat([0, 1], 20)
    losses = np.zeros((40, 3))
    losses[:, 1] = 1.0
    losses[:, 2] = 1.0
    losses[:4, 0] = [1, 1, 1, 0]  # model 0 misses 3 of cluster 0 ...
    losses[:4, 1] = [0, 0, 0, 1]  # ... where model 1 gets them, and model 1 misses one model 0 gets
    losses[20:32, 0] = 1.0  # model 0 misses 12 of cluster 1, all of which model 2 gets
    losses[20:32, 2] = 0.0
    losses[32:40, 2] = 0.0  # model 2 ties model 0 on the rest of cluster 1
    return clusters, losses


def test_the_overall_best_keeps_clusters_without_a_significant_challenger() -> None:
    clusters, losses = _losses()
    rule = fit_quality_rule(clusters, losses, k=2)
    assert rule.best == 0
    assert rule.choice.tolist() == [0, 2]
    assert rule.switched.tolist() == [False, True]
    assert rule.p_values[1] == pytest.approx(0.5**12)
    assert rule.p_values[0] == 1.0


def test_the_gamma_routes_each_prompt_to_its_clusters_model() -> None:
    clusters, losses = _losses()
    rule = fit_quality_rule(clusters, losses, k=3)  # cluster 2 has no validation prompt: the overall best
    gamma = rule_gamma(rule, np.array([0, 1, 2, 1]), 3)
    assert gamma.argmin(axis=1).tolist() == [0, 2, 0, 2]
    assert sorted(np.unique(gamma).tolist()) == [0.0, 1.0]


def test_the_level_is_corrected_for_the_number_of_challengers() -> None:
    # Cluster 0: 6 wins, 0 losses of model 1: p = 1/64 ~ 0.016 < 0.05, but above 0.05 / 9 with ten models.
    clusters = np.repeat([0, 1], 10)
    losses = np.ones((20, 10))
    losses[:10, :2] = 0.4  # model 1 ties model 0 on the last 4 prompts of cluster 0
    losses[:6, 0] = 1.0
    losses[:6, 1] = 0.0
    losses[10:, 0] = 0.0  # cluster 1 makes model 0 the best overall
    assert one_sided_sign_p(losses[:10, 1], losses[:10, 0]) == pytest.approx(1 / 64)
    assert fit_quality_rule(clusters, losses, k=2).choice.tolist() == [0, 0]
    assert fit_quality_rule(clusters, losses, k=2, bonferroni=False).choice.tolist() == [1, 0]


def test_missing_labels_are_left_out_of_the_pairs() -> None:
    a = np.array([0.0, 0.0, np.nan, 1.0])
    b = np.array([1.0, np.nan, 0.0, 1.0])
    assert one_sided_sign_p(a, b) == pytest.approx(0.5)  # one win, no loss among the complete, untied pairs


def test_bad_inputs_are_refused() -> None:
    clusters, losses = _losses()
    with pytest.raises(ValueError, match="cluster labels"):
        fit_quality_rule(clusters[:-1], losses, k=2)
    with pytest.raises(ValueError, match="alpha"):
        fit_quality_rule(clusters, losses, k=2, alpha=0.0)
    losses[:, 1] = np.nan
    with pytest.raises(ValueError, match="validation label"):
        fit_quality_rule(clusters, losses, k=2)
