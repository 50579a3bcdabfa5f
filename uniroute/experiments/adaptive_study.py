"""The adaptive onboarding strategy in the onboarding-set study (`--val-selection adaptive`).

Unlike the other strategies, each test LLM answers its own prompts (`adaptive_shared`: every round's batch is one,
answered by every test LLM, chosen from the gain summed over them): a first batch shared by all (the `allocated`
order, from the training LLMs' information only), then batches chosen from its own answers so far and the other
test LLMs' (selection/adaptive_onboarding.py). So its test Psi is measured per LLM on its own prompts, and its
router costs c(m) are its mean cost there. The router's hyper-parameters (K, shrinkage) are the ones the random
arm tunes at the same N (the tuning reads training LLMs only), so the pairing measures the choice of prompts
alone; the choice clusters the validation prompts with that same K (the cells it steers are the router's).

First look (25 trials, seed 0, count-aware K-means, Area difference from random at N = 25 / 50, wins/losses):
`adaptive` RouterBench +0.0051 (16/9) / +0.0062 (16/9), RouterDC -0.0047 (15/10) / -0.0062 (10/14);
`adaptive_shared` RouterBench +0.0035 (12/13) / +0.0049 (14/11), RouterDC +0.0022 (16/8) / -0.0012 (11/13).
At 100 trials (docs/results.md, "Adaptive onboarding") the signs did not hold: no difference is significant,
`adaptive` RouterBench -0.0020 (50/50) / -0.0049 (50/50), RouterDC +0.0004 (53/46) / -0.0026 (49/46);
`adaptive_shared` RouterBench +0.0010 (51/49) / -0.0018 (45/55), RouterDC +0.0018 (52/45) / +0.0015 (56/43).
So it is not a strategy of `uniroute onboarding-set`. Why it can hardly do more there: the tuned K at 25-50
answers is mostly 2-3, so there are few cells to steer between, and on RouterDC the test LLMs' mean losses lie
within 0.06 of each other (near-ties every way).

MMLU-Pro (27 LLMs with a cost, 10 test LLMs), 100 trials: `adaptive` -0.0048 (41/56) / -0.0168 (32/64, worse
than random, p < 0.05), `adaptive_shared` +0.0026 (52/46) / -0.0061 (40/56); at 25 trials both were significantly
worse at 50 (-0.0290, 3/20; -0.0187, 7/18). Controls on those 25 trials (N = 25 / 50): each test LLM its own
random prompts -0.0294 (8/17) / -0.0074 (5/17), so losing the shared prompts costs much with 10 test LLMs; the shared
`allocated` order continued to N with this router's K (no adaptivity) +0.0034 (13/11) / -0.0053 (8/11), so
steering the later answers toward open decisions is what loses at 50 (-0.0187, 7/18 shared); a guess, not measured:
it leaves the cells that look settled after one or two answers with those few, and those estimates are wrong.
Counting only PRIOR_ANSWERS (not the router's strength) in a cell's variance (SHRINKAGE_IS_EVIDENCE = False)
does not change that: `adaptive` -0.0156 (10/13) / -0.0259 (2/21).
"""

from __future__ import annotations

import numpy as np

from uniroute.routers.cluster.psi import psi_from_losses, shrunk_values
from uniroute.selection.adaptive_onboarding import adaptive_sets
from uniroute.selection.curves import curve_area
from uniroute.selection.onboarding_order import PoolView, onboarding_order
from uniroute.selection.scored_pool import LabelledPool
from uniroute.selection.state import TrialState

FIRST_BATCH = 10  # answers chosen from the pool's information before the newcomer's own answers steer the choice
BATCH = 5  # answers per adaptive round
SHARED = False  # every test LLM answers the same adaptive batch (see adaptive_onboarding.next_batches)
CLUSTER_METHODS = ("kmeans", "kmeans_shrunk")  # the kinds whose Psi cells the adaptive choice steers


def adaptive_choice(state: TrialState, k: int, strength: float, size: int, shared: bool = SHARED) -> list[np.ndarray]:
    """Per test LLM, its `size` validation prompts (indices into the trial's val) in the order asked."""
    split = state.split
    centroids = state.centroids(k)
    view = PoolView.of(centroids.assign(state.X_train), state.train_losses, k)
    clusters = centroids.assign(state.X_val)
    first = onboarding_order("allocated", clusters, view, min(FIRST_BATCH, size), seed=split.fit_seed)
    losses = state.losses[np.ix_(split.val, split.test_models)]
    costs = state.data.costs[np.ix_(split.val, split.test_models)]
    return adaptive_sets(clusters, losses, costs, view.weights, strength, first, size, BATCH, seed=split.fit_seed,
                         shared=shared)


def adaptive_area(state: TrialState, method: str, size: int, shared: bool = SHARED) -> float:
    """Test Area of the method's router (tuned as the random arm at `size`) with each test LLM onboarded on its
    own adaptively chosen `size` prompts."""
    tuned = state.tuned(method, size)
    k, strength = int(tuned.value), float(tuned.shrinkage)
    sets = adaptive_choice(state, k, strength, size, shared)
    split = state.split
    clusters = state.centroids(k).assign(state.X_val)
    losses = state.losses[np.ix_(split.val, split.test_models)]
    answered = np.zeros(losses.shape, dtype=bool)
    for j, chosen in enumerate(sets):
        answered[chosen, j] = True
    psi = psi_from_losses(clusters, np.where(answered, losses, np.nan), k, state.test_llm_names())
    costs = state.data.costs[np.ix_(split.val, split.test_models)]
    c = np.array([np.nanmean(costs[chosen, j]) for j, chosen in enumerate(sets)])
    pool = LabelledPool.of(state.data.scores[np.ix_(split.test, split.test_models)],
                           state.data.costs[np.ix_(split.test, split.test_models)], c)
    gamma = state.test_onehot(k) @ shrunk_values(psi.values, psi.counts, strength).T
    return curve_area(pool.curve(gamma, state.config.n_lambdas))


def adaptive_study(state: TrialState, sizes: list[int], methods: list[str],
                   shared: bool = SHARED) -> dict[str, dict[str, float]]:
    """{size: {method: test Area}} of the adaptive strategy (cluster kinds only; NaN for the others)."""
    return {str(size): {m: adaptive_area(state, m, size, shared) if m in CLUSTER_METHODS else float("nan")
                        for m in methods} for size in sizes}
