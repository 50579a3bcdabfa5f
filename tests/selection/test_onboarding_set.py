"""The onboarding set: an ordered choice of validation prompts from the pool's information only, nested, every
cluster covered before any gets a second answer, allocation toward large and contested clusters."""

from __future__ import annotations

import numpy as np
import pytest

from tests.selection.trials import poisoned, small_trial
from uniroute.experiments.onboarding_study import selected_split
from uniroute.experiments.protocol import EvalConfig
from uniroute.selection.onboarding_order import STRATEGIES, PoolView, facility_order, onboarding_order


def _candidates(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, PoolView]:
    rng = np.random.default_rng(seed)
    clusters = np.repeat([0, 1, 2], [30, 20, 10])
    X = rng.normal(size=(60, 8)) + clusters[:, None]
    losses = rng.integers(0, 2, size=(60, 4)).astype(float)
    view = PoolView(weights=np.array([0.5, 0.3, 0.2]), spread=np.array([0.5, 0.5, 0.05]))
    return clusters, X, losses, view


@pytest.mark.parametrize("strategy", [s for s in STRATEGIES if s != "random"])
def test_every_cluster_gets_an_answer_before_any_gets_a_second_and_prefixes_nest(strategy):
    clusters, X, losses, view = _candidates()
    order = onboarding_order(strategy, clusters, view, 20, X=X, pool_losses=losses)
    assert len(set(order.tolist())) == 20
    assert sorted(clusters[order[:3]].tolist()) == [0, 1, 2]
    shorter = onboarding_order(strategy, clusters, view, 7, X=X, pool_losses=losses)
    assert shorter.tolist() == order[:7].tolist()  # the first N of a longer order are the order for N


def test_the_allocation_favours_large_contested_clusters_over_settled_ones():
    clusters, X, losses, view = _candidates()
    order = onboarding_order("allocated", clusters, view, 30, X=X, pool_losses=losses)
    counts = np.bincount(clusters[order], minlength=3)
    # n_k ~ (w_k s_k)^(2/3): 0.25, 0.15, 0.01 -> about 16.6, 11.8, 1.6 of 30 answers
    assert counts[2] <= 2 and counts[0] > counts[1] > counts[2]
    stratified = np.bincount(clusters[onboarding_order("stratified", clusters, view, 30, X=X, pool_losses=losses)],
                             minlength=3)
    assert stratified.tolist() == [15, 9, 6]  # proportional to the traffic shares 0.5, 0.3, 0.2


def test_answered_prompts_count_toward_their_cluster_and_are_never_chosen_again():
    clusters, X, losses, view = _candidates()
    answered = np.flatnonzero(clusters == 0)[:10]
    order = onboarding_order("anchored", clusters, view, 10, X=X, pool_losses=losses, answered=answered)
    assert not set(order.tolist()) & set(answered.tolist())
    assert clusters[order[0]] != 0  # cluster 0 is covered already: the uncovered clusters come first
    assert onboarding_order("random", clusters, view, 3, answered=[0, 1]).tolist() == [2, 3, 4]


def test_facility_location_starts_with_the_centre_of_the_largest_group():
    # two groups: prompts 0-3 alike (3 and 1 most central), prompts 4-5 alike; 6 an outlier
    sim = np.full((7, 7), 0.1)
    sim[:4, :4] = 0.8
    sim[4:6, 4:6] = 0.8
    sim[1, :4] = sim[:4, 1] = 0.9
    np.fill_diagonal(sim, 1.0)
    order = facility_order(sim, np.zeros(7, dtype=bool))
    assert order[:2] == [1, 4] and order.index(6) > 1  # the group centres first, not the outlier
    assert facility_order(sim, np.array([False, True, False, False, False, False, False]))[0] == 4


def test_an_unknown_strategy_is_refused_by_name():
    clusters, X, losses, view = _candidates()
    with pytest.raises(ValueError, match="unknown onboarding-set strategy 'greedy'"):
        onboarding_order("greedy", clusters, view, 5)
    with pytest.raises(ValueError, match="give the sizes N"):
        EvalConfig(val_selections=("best",))


def test_the_choice_in_a_trial_never_reads_a_test_llms_answers():
    state = small_trial(EvalConfig(methods=("kmeans",), val_sizes=(10, 20)))
    split = state.split
    chosen = selected_split(state, "anchored", 20).val
    again = selected_split(poisoned(state, [split.val] * len(split.test_models)), "anchored", 20).val
    assert again.tolist() == chosen.tolist()
    assert sorted(chosen.tolist()) == sorted(split.val.tolist())  # a reordering of the same validation prompts
    assert chosen[:20].tolist() != split.val[:20].tolist()


def test_best_is_the_allocation_with_random_prompts_within_a_cluster():
    # `anchored` would shift a newcomer's plain-mean Psi cell next to the pool's (see the module): not served yet
    clusters, X, losses, view = _candidates()
    best = onboarding_order("best", clusters, view, 25, X=X, pool_losses=losses, seed=3)
    assert best.tolist() == onboarding_order("allocated", clusters, view, 25, seed=3).tolist()
