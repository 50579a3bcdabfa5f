"""The routing rule where its easy cases hide bugs: costs out of index order, a pool whose priciest model is below
the overall maximum cost, and a shrinking router's `route` (not only its gamma). Each case is checked against
a brute-force argmin of gamma + lambda * cost over the pool (ties: cheaper, then lower index)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.psi import shrunk_values
from uniroute.routers.router import Router

CENTERS = np.array([[1, 0], [0, 1], [-1, 0]], dtype=np.float32)
X3 = np.array([[0.9, 0.1], [0.1, 0.9], [-0.9, 0.1]], dtype=np.float32)  # one prompt per cluster, in order
MODELS = ("a", "b", "c")
# Costs deliberately NOT increasing with the index: sorting the pool by cost reorders its columns.
COSTS_SHUFFLED = np.array([4.0, 1.0, 2.0])
PSI = np.array([
    [0.0, 0.125, 0.5],  # a: best and priciest
    [0.5, 0.25, 0.75],  # b: worst and cheapest
    [0.25, 0.25, 0.5],  # c
])


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


def brute_force(gamma: np.ndarray, costs: np.ndarray, lam: float, pool: list[int]) -> np.ndarray:
    """(n,) argmin over pool of gamma + lam * cost; ties to the cheaper, then the lower index (a plain loop)."""
    out = []
    for row in gamma:
        best = min(pool, key=lambda m: (row[m] + lam * costs[m], costs[m], m))
        out.append(best)
    return np.array(out)


def _router(costs=COSTS_SHUFFLED, psi=PSI, assigner=None, **kw) -> Router:
    return Router("emb-1", MODELS, np.asarray(costs, float), psi, assigner or Centroids(CENTERS),
                  kw.pop("psi_counts", np.full((3, 3), 10)), **kw)


def test_costs_out_of_index_order_by_hand():
    r = _router()
    # lambda 1/8: a = .5 .625 1.0 ; b = .625 .375 .875 ; c = .5 .5 .75
    # cluster 0: a and c tie at .5 -> cheaper c; cluster 1 -> b; cluster 2 -> c.
    assert r.route_names(X3, lam=0.125).tolist() == ["c", "b", "c"]
    assert r.cluster_table(0.125).tolist() == [2, 1, 2]
    # lambda 0: a wins clusters 0 and 1; cluster 2: a and c tie at .5 -> cheaper c.
    assert r.route_names(X3).tolist() == ["a", "a", "c"]
    # Pool {a, b}, lambda 1/8: cluster 0 -> a (.5 < .625), cluster 1 -> b, cluster 2 -> b (.875 < 1.0).
    assert r.route_names(X3, lam=0.125, pool=["b", "a"]).tolist() == ["a", "b", "b"]


@pytest.mark.parametrize("soft", [False, True], ids=["one-hot", "soft"])
def test_costs_out_of_index_order_route_by_the_brute_force_argmin(soft):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 2)).astype(np.float32)
    for trial in range(20):
        costs = rng.permutation([0.5, 1.0, 3.0, 7.0])[:3] * rng.uniform(0.5, 2)
        psi = rng.uniform(size=(3, 3))
        assigner = SoftAssigner(w=rng.normal(size=(2, 3)) * 3) if soft else Centroids(CENTERS)
        r = _router(costs=costs, psi=psi, assigner=assigner)
        gamma = r.gamma(X)
        for lam in (0.0, 0.02, 0.1, 0.3, 1.0):
            for pool in (None, ["a", "b"], ["c", "a"], ["b", "c"]):
                idx = [0, 1, 2] if pool is None else sorted(MODELS.index(m) for m in pool)
                np.testing.assert_array_equal(r.route(X, lam, pool), brute_force(gamma, costs, lam, idx),
                                              err_msg=f"trial {trial}, costs {costs}, lambda {lam}, pool {pool}")


def test_a_pools_budget_is_a_fraction_of_the_pools_own_priciest_model():
    # Costs a=1, b=2, c=4; the pool {a, b} tops out at 2, not at the overall 4.
    psi = np.array([[0.5, 0.25, 0.75], [0.25, 0.25, 0.5], [0.0, 0.125, 0.5]])
    r = Router("emb-1", MODELS, np.array([1.0, 2.0, 4.0]), psi, Centroids(CENTERS), np.full((3, 3), 10))
    x_val = np.array([[0.9, 0.1], [0.8, -0.1], [0.1, 0.9], [-0.9, 0.1]], dtype=np.float32)
    # Pool {a, b}: at lambda 0 cluster 0 -> b, cluster 1 -> a (tie, cheaper), cluster 2 -> b: mean (2+2+1+2)/4
    # = 1.75 = 0.875 of 2; from lambda 1/4 everything goes to a: 1 = 0.5 of 2.
    assert r.lambda_for_budget(x_val, 0.875, pool=["a", "b"]) == 0.0
    lam = r.lambda_for_budget(x_val, 0.6, pool=["a", "b"])
    assert lam == pytest.approx(0.25)
    assert r.costs[r.route(x_val, lam, pool=["a", "b"])].mean() <= 0.6 * 2
    with pytest.raises(ValueError, match="below the least achievable"):
        r.lambda_for_budget(x_val, 0.4, pool=["a", "b"])  # 0.4 of 2 = 0.8 < a's cost 1


def test_a_pool_below_the_overall_maximum_cost_meets_its_budget_by_brute_force():
    rng = np.random.default_rng(11)
    x_val = rng.normal(size=(80, 2)).astype(np.float32)
    for _ in range(20):
        costs = rng.uniform(0.1, 1.0, size=3)
        psi = rng.uniform(size=(3, 3))
        for soft in (False, True):
            assigner = SoftAssigner(w=rng.normal(size=(2, 3)) * 3) if soft else Centroids(CENTERS)
            r = _router(costs=costs, psi=psi, assigner=assigner)
            pool = [m for m, _ in sorted(zip(MODELS, costs, strict=True), key=lambda t: t[1])[:2]]  # the two cheapest
            pool_max = costs[[MODELS.index(m) for m in pool]].max()
            assert pool_max < costs.max()
            cheapest = r.costs[r.route(x_val, 1e9, pool)].mean()
            for budget in np.linspace(cheapest / pool_max, 1.0, 5):
                lam = r.lambda_for_budget(x_val, budget, pool=pool)
                spent = r.costs[r.route(x_val, lam, pool)].mean()
                assert spent <= budget * pool_max * (1 + 1e-9), (budget, lam, spent)
                if lam > 0:  # the smallest such lambda: a hair below it, the budget is exceeded
                    assert r.costs[r.route(x_val, lam * (1 - 1e-7), pool)].mean() > budget * pool_max


def _shrinking_router(assigner=None) -> Router:
    # a's cell 0 rests on one lucky prompt (loss 0); shrunk toward a's overall loss it is worse than c's.
    psi = np.array([[0.0, 0.75, 0.75], [0.5, 0.25, 0.75], [0.25, 0.25, 0.5]])
    counts = np.array([[1, 10, 10], [10, 10, 10], [10, 10, 10]])
    return _router(costs=np.array([1.0, 1.0, 1.0]), psi=psi, assigner=assigner, psi_counts=counts, shrinkage=4.0)


def test_a_shrinking_router_routes_by_its_shrunk_cells():
    r = _shrinking_router()
    shrunk = shrunk_values(r.psi, r.psi_counts, 4.0)
    np.testing.assert_allclose(r.routing_psi, shrunk)
    assert shrunk[0, 0] > shrunk[2, 0]  # shrinking turns cluster 0 from a to c
    assert r.route_names(X3).tolist() == ["c", "c", "c"]  # raw Psi would route cluster 0 to a
    assert r.cluster_table(0.0).tolist() == [2, 2, 2]
    # raw Psi: a, b, a. Cluster 0 is easy for the pool (7.5 / 21), so a's prior there is (15 + 20 * 7.5 / 21) / 41
    # and its lucky cell shrinks to 4 * 0.540 / 5 = 0.432, still under b's 0.484: a keeps cluster 0 against b.
    assert r.route_names(X3, 0.0, ["a", "b"]).tolist() == ["a", "b", "b"]
    # The budget is turned into lambda on the shrunk cells too: the routed cost meets it.
    r2 = _router(costs=np.array([4.0, 1.0, 2.0]), psi=r.psi, psi_counts=r.psi_counts, shrinkage=4.0)
    for budget in (0.3, 0.5, 0.8):
        lam = r2.lambda_for_budget(X3, budget)
        assert r2.costs[r2.route(X3, lam)].mean() <= budget * 4
        gamma = r2.routing_psi.T  # X3: one prompt per cluster, in cluster order
        np.testing.assert_array_equal(r2.route(X3, lam), brute_force(gamma, r2.costs, lam, [0, 1, 2]))


def test_a_shrinking_soft_router_routes_by_its_shrunk_cells():
    rng = np.random.default_rng(3)
    assigner = SoftAssigner(w=rng.normal(size=(2, 3)) * 4)
    r = _shrinking_router(assigner)
    X = rng.normal(size=(200, 2)).astype(np.float32)
    membership = assigner.membership(X)
    by_shrunk = brute_force(membership @ r.routing_psi.T, r.costs, 0.0, [0, 1, 2])
    by_raw = brute_force(membership @ r.psi.T, r.costs, 0.0, [0, 1, 2])
    assert (by_shrunk != by_raw).any()  # the case can tell the two apart
    np.testing.assert_array_equal(r.route(X), by_shrunk)


def test_a_budget_of_one_routes_as_lambda_zero_even_when_the_float_sum_lands_an_ulp_above():
    # Found by the property tests: every prompt on the priciest model, and the weighted mean of its cost one
    # ulp above the cost itself; the budget 1 then came back as a positive lambda routing to cheaper models.
    rng = np.random.default_rng(0)
    for _ in range(400):
        costs, psi = rng.uniform(0.1, 1, size=3), rng.uniform(size=(3, 3))
        r = _router(costs=costs, psi=psi)
        x_val = rng.normal(size=(80, 2)).astype(np.float32)
        assert r.lambda_for_budget(x_val, 1.0) == 0.0
