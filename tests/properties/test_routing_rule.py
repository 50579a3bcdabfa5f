"""Properties of the routing rule on any router: the choice is the argmin over the pool of gamma + lambda * cost
(ties: cheaper, then lower index), the expected cost never rises with lambda, and a budget turned into lambda
is met on any pool, by the smallest such lambda.

Losses, costs and lambdas are binary fractions, so one-hot routing is exact and a tie is a real tie."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router


@dataclass(frozen=True, eq=False)
class SoftAssigner:
    """A fixed soft membership (softmax of X @ W): routes through the generic RoutingRule.route."""

    w: np.ndarray  # (d, K)

    @property
    def k(self) -> int:
        return self.w.shape[1]

    def membership(self, X: np.ndarray) -> np.ndarray:
        z = np.asarray(X, dtype=np.float64) @ self.w
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


@st.composite
def routers(draw, soft: bool = False):
    """(router, X (n, K) prompts, pool or None): M models, K clusters, prompts placed on cluster centres."""
    m = draw(st.integers(1, 6))
    k = draw(st.integers(1, 5))
    psi = np.array(draw(st.lists(st.lists(st.integers(0, 64), min_size=k, max_size=k), min_size=m, max_size=m)))
    psi = psi / 64.0
    costs = np.array(draw(st.lists(st.integers(1, 32), min_size=m, max_size=m))) / 8.0
    counts = np.array(draw(st.lists(st.lists(st.integers(1, 30), min_size=k, max_size=k), min_size=m, max_size=m)))
    shrinkage = draw(st.sampled_from([0.0, 0.0, 2.0]))
    centers = np.eye(k, dtype=np.float32)
    assigner = Centroids(centers)
    if soft:
        assigner = SoftAssigner(w=np.array(draw(st.lists(st.lists(st.integers(-8, 8), min_size=k, max_size=k),
                                                          min_size=k, max_size=k)), dtype=float) / 2)
    clusters = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=40))
    X = centers[clusters]
    models = tuple(f"m{i}" for i in range(m))
    pool = draw(st.none() | st.lists(st.sampled_from(models), min_size=1, unique=True))
    router = Router("emb", models, costs, psi, assigner, counts, shrinkage=shrinkage)
    return router, X, pool


def _brute_force(router: Router, X: np.ndarray, lam: float, pool) -> np.ndarray:
    idx = range(len(router.models)) if pool is None else sorted(router.models.index(p) for p in pool)
    gamma = router.assigner.membership(X).astype(np.float64) @ router.routing_psi.T
    return np.array([min(idx, key=lambda m, row=row: (row[m] + lam * router.costs[m], router.costs[m], m))
                     for row in gamma])


LAMBDAS = st.integers(0, 64).map(lambda i: i / 16.0)


@settings(max_examples=150)
@given(routers(), LAMBDAS)
def test_the_choice_is_the_argmin_of_gamma_plus_lambda_cost(case, lam):
    router, X, pool = case
    np.testing.assert_array_equal(router.route(X, lam, pool), _brute_force(router, X, lam, pool))


@settings(max_examples=80)
@given(routers(soft=True), LAMBDAS)
def test_a_soft_routers_choice_is_the_argmin_of_gamma_plus_lambda_cost(case, lam):
    router, X, pool = case
    chosen = router.route(X, lam, pool)
    gamma = router.gamma(X) + lam * router.costs
    idx = np.arange(len(router.models)) if pool is None else np.array(sorted(router.models.index(p) for p in pool))
    assert set(chosen.tolist()) <= set(idx.tolist())
    best = gamma[:, idx].min(axis=1)
    np.testing.assert_allclose(gamma[np.arange(len(X)), chosen], best, rtol=0, atol=1e-12)


@settings(max_examples=150)
@given(st.booleans().flatmap(lambda soft: routers(soft=soft)), LAMBDAS)
def test_the_explained_terms_rank_the_choice_first_then_its_fallbacks(case, lam):
    """route_terms (what --explain prints and the decision is read from): rank 1 is route's choice, every total is
    error + lambda x cost, and the ranking is the rule's order (total, then cost, then index) over the pool."""
    router, X, pool = case
    terms = router.route_terms(X, lam, pool)
    np.testing.assert_array_equal(terms.chosen(), router.route(X, lam, pool))
    for row in terms.explained():
        assert all(t["total"] == t["expected_error"] + t["lam_cost"] and t["lam_cost"] == lam * t["cost"] for t in row)
        keys = [(t["total"], t["cost"], router.models.index(t["model"])) for t in row]
        assert keys == sorted(keys) and {t["model"] for t in row} == set(pool or router.models)
        assert all(t["error_lo"] <= t["error_hi"] for t in row)
    if router.one_hot:
        table = router.cluster_terms(lam, pool)
        np.testing.assert_array_equal(table.chosen(), router.cluster_table(lam, pool))


@settings(max_examples=150)
@given(routers(), st.lists(LAMBDAS, min_size=2, max_size=8))
def test_expected_cost_never_rises_with_lambda(case, lams):
    router, X, pool = case
    spent = [router.costs[router.route(X, lam, pool)].mean() for lam in sorted(lams)]
    assert all(later <= earlier for earlier, later in zip(spent, spent[1:], strict=False)), spent
    # and per prompt: a larger lambda never moves a prompt to a pricier model
    lo, hi = min(lams), max(lams)
    assert (router.costs[router.route(X, hi, pool)] <= router.costs[router.route(X, lo, pool)]).all()


@settings(max_examples=150)
@given(routers(), st.integers(0, 100))
def test_budget_calibration_meets_its_target_on_any_pool(case, percent):
    router, X, pool = case
    idx = np.arange(len(router.models)) if pool is None else [router.models.index(p) for p in pool]
    pool_max = router.costs[idx].max()
    least = router.costs[router.route(X, 1e6, pool)].mean()  # everything on the cheapest reachable choice
    # min: at 100% the sum can round a hair above 1, which check_budget rightly refuses.
    budget = min(1.0, least / pool_max + (1 - least / pool_max) * percent / 100)
    lam = router.lambda_for_budget(X, budget, pool)
    spent = router.costs[router.route(X, lam, pool)].mean()
    assert spent <= budget * pool_max * (1 + 1e-9), (budget, lam, spent)
    if lam > 0:  # the smallest such lambda: a little below it, the budget is exceeded
        assert router.costs[router.route(X, lam * (1 - 1e-6), pool)].mean() > budget * pool_max
    if percent == 100:
        assert lam == 0.0


@settings(max_examples=60)
@given(routers(), st.floats(0.001, 0.999))  # a budget of 0 is outside (0, 1] itself: refused by check_budget
def test_a_budget_below_the_least_reachable_cost_is_refused(case, fraction):
    router, X, pool = case
    idx = np.arange(len(router.models)) if pool is None else [router.models.index(p) for p in pool]
    pool_max = router.costs[idx].max()
    least = router.costs[router.route(X, 1e6, pool)].mean()
    budget = least / pool_max * fraction
    if budget * pool_max < least * (1 - 1e-9):
        with pytest.raises(ValueError, match="below the least achievable"):
            router.lambda_for_budget(X, budget, pool)
