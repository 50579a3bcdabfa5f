"""Adaptive onboarding: batches after the first go where a newcomer's decision is open, read only answered labels."""

from __future__ import annotations

import numpy as np
import pytest

from tests.selection.trials import poisoned, small_trial
from uniroute.experiments.adaptive_study import adaptive_area, adaptive_choice
from uniroute.experiments.onboarding_study import selection_study
from uniroute.experiments.protocol import EvalConfig
from uniroute.selection.adaptive_onboarding import (
    adaptive_sets,
    answer_gain,
    cell_posterior,
    next_batches,
)


def _pool(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Three clusters of 40 prompts, three newcomers: in cluster 0 newcomer 0 clearly wins, in cluster 1 it
    clearly loses, in cluster 2 newcomers 0 and 1 are level."""
    rng = np.random.default_rng(seed)
    clusters = np.repeat([0, 1, 2], 40)
    rate = np.array([[0.05, 0.6, 0.6], [0.95, 0.3, 0.3], [0.4, 0.4, 0.9]])  # (K, M) loss rates
    losses = (rng.random((120, 3)) < rate[clusters]).astype(float)
    costs = np.ones((120, 3))
    return clusters, losses, costs, np.full(3, 1 / 3)


@pytest.mark.parametrize("shared", [False, True])
def test_the_next_batch_goes_where_the_decision_is_open(shared):
    clusters, losses, costs, weights = _pool()
    answered = np.zeros(losses.shape, dtype=bool)
    answered[np.r_[0:6, 40:46, 80:86]] = True  # six answers per cluster from everyone
    picks = next_batches(clusters, losses, costs, answered, weights, 2.0, 6, np.random.default_rng(0), shared)
    assert np.bincount(clusters[picks[0]], minlength=3).argmax() == 2  # the level cluster gets most answers
    assert not answered[picks[0], 0].any()  # never a prompt answered already


def test_a_clear_win_and_a_clear_loss_are_worth_less_than_a_tie():
    mean = np.array([[0.1, 0.9, 0.5], [0.6, 0.3, 0.5]])
    var = np.full((2, 3), 0.02)
    gain = answer_gain(mean, var, np.full((2, 3), 5.0), np.ones(2), np.full(3, 1 / 3), 2.0)
    assert gain[0, 2] > gain[0, 0] and gain[0, 2] > gain[0, 1]


@pytest.mark.parametrize("shared", [False, True])
def test_the_choice_reads_only_labels_of_prompts_already_chosen(shared):
    clusters, losses, costs, weights = _pool(1)
    first = [0, 40, 80, 1, 41, 81]
    sets = adaptive_sets(clusters, losses, costs, weights, 2.0, first, 30, 5, seed=4, shared=shared)
    assert all(len(set(s.tolist())) == 30 and s[:6].tolist() == first for s in sets)
    poisoned, dear = losses.copy(), costs.copy()
    for j, chosen in enumerate(sets):  # every label and cost of a prompt a newcomer was not asked flips
        never = np.setdiff1d(np.arange(120), chosen)
        poisoned[never, j] = 1.0 - poisoned[never, j]
        dear[never, j] = 99.0
    again = adaptive_sets(clusters, poisoned, dear, weights, 2.0, first, 30, 5, seed=4, shared=shared)
    assert [s.tolist() for s in again] == [s.tolist() for s in sets]
    if shared:
        assert all(s.tolist() == sets[0].tolist() for s in sets)


def test_the_gains_are_the_same_whatever_the_unanswered_labels_say():
    clusters, losses, costs, weights = _pool(2)
    answered = np.zeros(losses.shape, dtype=bool)
    answered[np.r_[0:5, 40:45, 80:85]] = True
    answered[5:9, 1] = True  # one newcomer answered more: not a shared prompt
    poisoned = np.where(answered, losses, 1.0 - losses)
    gains = []
    for table in (losses, poisoned):
        mean, var, counts = cell_posterior(clusters, table, answered, 3, 2.0)
        gains.append(answer_gain(mean, var, counts, np.ones(3), weights, 2.0))
    assert np.array_equal(gains[0], gains[1])


def test_in_a_trial_the_first_batch_reads_no_test_llm_answer_and_the_study_scores_it():
    config = EvalConfig(methods=("kmeans_shrunk",), val_sizes=(20,), val_selections=("adaptive",))
    state = small_trial(config)
    split = state.split
    sets = adaptive_choice(state, 3, 2.0, 20)
    never = [split.val[np.setdiff1d(np.arange(len(split.val)), chosen)] for chosen in sets]
    again = adaptive_choice(poisoned(state, never), 3, 2.0, 20)
    assert [s.tolist() for s in again] == [s.tolist() for s in sets]
    study = selection_study(state, config, ["kmeans_shrunk"])  # what `uniroute evaluate --val-selection` runs
    assert study["adaptive"]["20"]["kmeans_shrunk"] == adaptive_area(state, "kmeans_shrunk", 20)
    assert 0.0 < study["adaptive"]["20"]["kmeans_shrunk"] <= 1.0
