import pickle
from dataclasses import dataclass

import numpy as np
import pytest

from uniroute.routers import rule
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router
from uniroute.routers.rule import EmbedderMismatch

# Three clusters in 2-d; three models with costs 1, 2, 4. All numbers are binary fractions, so the
# hand-computed ties below are exact in floating point.
CENTERS = np.array([[1, 0], [0, 1], [-1, 0]], dtype=np.float32)
MODELS = ("a", "b", "c")
COSTS = np.array([1.0, 2.0, 4.0])
PSI = np.array(
    [
        [0.5, 0.25, 0.75],  # a
        [0.25, 0.25, 0.5],  # b
        [0.0, 0.125, 0.5],  # c
    ]
)
# One prompt per cluster, in cluster order.
X3 = np.array([[0.9, 0.1], [0.1, 0.9], [-0.9, 0.1]], dtype=np.float32)


def _router(**kw) -> Router:
    args = {"embedder_id": "emb-1", "models": MODELS, "costs": COSTS, "psi": PSI,
            "assigner": Centroids(CENTERS), "psi_counts": np.full((3, 3), 10)}
    args.update(kw)
    return Router(**args)


@dataclass(frozen=True, eq=False)
class SoftAssigner:
    """A fixed soft membership (softmax of X @ W), standing in for a LearnedMap's shape of output."""

    w: np.ndarray  # (d, K)

    @property
    def k(self) -> int:
        return self.w.shape[1]

    def membership(self, X: np.ndarray) -> np.ndarray:
        z = np.asarray(X, dtype=np.float64) @ self.w
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def test_routing_rule_by_hand():
    r = _router()
    # lambda = 0: cluster 0 -> c (0.0); cluster 1 -> c (0.125); cluster 2 -> b and c tie at 0.5 -> cheaper b.
    assert r.route(X3).tolist() == [2, 2, 1]
    # lambda = 1/8: scores a = .625 .375 .875, b = .5 .5 .75, c = .5 .625 1.0
    # cluster 0: b and c tie at 0.5 -> cheaper b; cluster 1 -> a; cluster 2 -> b.
    assert r.route(X3, lam=0.125).tolist() == [1, 0, 1]
    assert r.route_names(X3, lam=0.125).tolist() == ["b", "a", "b"]
    assert r.cluster_table(0.125).tolist() == [1, 0, 1]
    # A huge lambda routes everything to the cheapest model.
    assert r.route(X3, lam=1e6).tolist() == [0, 0, 0]
    assert r.route(X3).dtype == np.int64


def test_ties_between_equal_costs_go_to_the_lower_index():
    # d duplicates b (same Psi, same cost) and comes later: b must win; put d first and d wins.
    r = _router().with_model("d", PSI[1], 2.0, counts=np.full(3, 10))
    assert r.route_names(X3, lam=0.125).tolist() == ["b", "a", "b"]
    r2 = Router("emb-1", ("d", "a", "b", "c"), np.r_[2.0, COSTS], np.vstack([PSI[1], PSI]), Centroids(CENTERS))
    assert r2.route_names(X3, lam=0.125).tolist() == ["d", "a", "d"]


def test_gamma_is_membership_times_psi():
    r = _router()
    np.testing.assert_array_equal(r.gamma(X3), PSI.T)


def test_pool_filter():
    r = _router()
    # Pool {a, b}, lambda 0: cluster 0 -> b (.25 < .5); cluster 1 -> a and b tie at .25 -> cheaper a; cluster 2 -> b.
    assert r.route_names(X3, pool=["b", "a"]).tolist() == ["b", "a", "b"]
    assert r.route_names(X3, pool=["c"]).tolist() == ["c", "c", "c"]
    with pytest.raises(ValueError, match=r"unknown models in pool: \['x', 'y'\]"):
        r.route(X3, pool=["a", "y", "x"])
    with pytest.raises(ValueError, match="pool is empty"):
        r.route(X3, pool=[])
    with pytest.raises(TypeError, match="not the string"):
        r.route(X3, pool="a")


def test_negative_or_nan_lambda_is_refused():
    for lam in (-0.1, np.nan, np.inf):
        with pytest.raises(ValueError, match="lambda must be a finite number >= 0"):
            _router().route(X3, lam=lam)


def test_soft_assigner_routes_by_brute_force_argmin(monkeypatch):
    monkeypatch.setattr(rule, "ROUTE_BLOCK", 7)  # 200 rows -> many blocks, the last one partial
    rng = np.random.default_rng(0)
    assigner = SoftAssigner(w=rng.normal(size=(2, 3)))
    r = _router(assigner=assigner)
    X = rng.normal(size=(200, 2)).astype(np.float32)
    for lam, pool in ((0.0, None), (0.05, None), (0.1, ["a", "c"])):
        idx = np.arange(3) if pool is None else np.array([0, 2])
        scores = assigner.membership(X) @ PSI.T + lam * COSTS
        expected = idx[np.argmin(scores[:, idx], axis=1)]
        np.testing.assert_array_equal(r.route(X, lam=lam, pool=pool), expected)
    with pytest.raises(TypeError, match="one-hot"):
        r.cluster_table(0.0)


def test_one_hot_fast_path_equals_gamma_argmin():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    r = _router(psi=rng.uniform(size=(3, 3)))
    for lam in (0.0, 0.03, 0.3):
        np.testing.assert_array_equal(r.route(X, lam), np.argmin(r.gamma(X) + lam * COSTS, axis=1))


# Validation prompts: two in cluster 0, one each in clusters 1 and 2. Per cluster, as lambda grows:
#   cluster 0: c, then b from 1/8 (c->b crossing .25/2), then a from 1/4 (b->a crossing .25/1)
#   cluster 1: c, then a from 1/24 (c->a crossing .125/3)
#   cluster 2: b, then a from 1/4
# Mean cost (fraction of 4): 3.5 (.875) on [0, 1/24), 2.75 (.6875) to 1/8, 1.75 (.4375) to 1/4, then 1 (.25).
X_VAL = np.array([[0.9, 0.1], [0.8, -0.1], [0.1, 0.9], [-0.9, 0.1]], dtype=np.float32)


@pytest.mark.parametrize(
    ("budget", "lam"),
    [(1.0, 0.0), (0.875, 0.0), (0.8, 1 / 24), (0.6875, 1 / 24), (0.5, 0.125), (0.4375, 0.125), (0.3, 0.25),
     (0.25, 0.25)],
)
def test_budget_to_lambda_by_hand(budget, lam):
    r = _router()
    got = r.lambda_for_budget(X_VAL, budget)
    assert got == pytest.approx(lam, rel=1e-9, abs=0)
    assert COSTS[r.route(X_VAL, got)].mean() <= budget * 4 + 1e-12
    if got > 0:  # smallest: a hair below, the budget is exceeded
        assert COSTS[r.route(X_VAL, got * (1 - 1e-6))].mean() > budget * 4


def test_budget_below_cheapest_is_an_error():
    with pytest.raises(ValueError, match="below the least achievable mean cost"):
        _router().lambda_for_budget(X_VAL, 0.2)


def test_budget_within_a_pool():
    r = _router()
    # Pool {b, c}, max cost 4. Cluster 0: c, then b from 1/8. Cluster 1: c, then b from 1/16 (.125/2).
    # Cluster 2: b. Mean: (8+4+2)/4 = 3.5 ; from 1/16: (8+2+2)/4 = 3 ; from 1/8: 2.
    assert r.lambda_for_budget(X_VAL, 0.75, pool=["b", "c"]) == pytest.approx(1 / 16)
    assert r.lambda_for_budget(X_VAL, 0.5, pool=["b", "c"]) == pytest.approx(1 / 8)


def test_budget_with_soft_assigner_matches_a_dense_sweep():
    rng = np.random.default_rng(2)
    r = _router(assigner=SoftAssigner(w=rng.normal(size=(2, 3)) * 3))
    X = rng.normal(size=(60, 2)).astype(np.float32)
    grid = np.concatenate([[0.0], np.geomspace(1e-4, 10, 4000)])
    mean_cost = np.array([COSTS[r.route(X, g)].mean() for g in grid])
    for budget in (0.8, 0.6, 0.4, 0.3):
        lam = r.lambda_for_budget(X, budget)
        assert COSTS[r.route(X, lam)].mean() <= budget * 4 + 1e-12
        first_ok = grid[np.argmax(mean_cost <= budget * 4)]
        assert lam <= first_ok  # never larger than the first feasible grid point
        below = grid[grid < lam]
        assert (mean_cost[: len(below)] > budget * 4).all()


def test_with_and_without_model_return_new_routers():
    r = _router()
    r2 = r.with_model("d", [0.0, 0.0, 0.0], 0.5, counts=[3, 3, 3])
    assert r2.models == ("a", "b", "c", "d") and r.models == MODELS
    assert r2.route_names(X3).tolist() == ["d", "d", "d"]
    assert r2.psi_counts[-1].tolist() == [3, 3, 3]
    # Replacing keeps the position.
    r3 = r2.with_model("a", [1.0, 1.0, 1.0], 9.0, counts=[1, 1, 1])
    assert r3.models == r2.models and r3.costs[0] == 9.0 and r3.psi[0].tolist() == [1, 1, 1]
    assert r2.costs[0] == 1.0
    r4 = r3.without_model("d")
    assert r4.models == MODELS and r4.route_names(X3).tolist() == ["c", "c", "b"]
    assert r4.psi_counts.shape == (3, 3)
    with pytest.raises(ValueError, match="'zz' is not in the router"):
        r.without_model("zz")
    with pytest.raises(ValueError, match="shape"):
        r.with_model("e", [0.1, 0.2], 1.0, counts=[1, 1])
    with pytest.raises(ValueError, match="counts"):
        r.with_model("e", [0.1, 0.2, 0.3], 1.0)
    with pytest.raises(ValueError, match="at least one model"):
        _router(models=("a",), costs=[1.0], psi=PSI[:1], psi_counts=None).without_model("a")


def test_check_embedder_refuses_a_mismatch():
    r = _router()
    r.check_embedder("emb-1")
    with pytest.raises(EmbedderMismatch, match="'emb-2'.*'emb-1'"):
        r.check_embedder("emb-2")
    assert issubclass(EmbedderMismatch, ValueError)


def test_router_is_frozen_validated_and_pickles():
    r = _router()
    with pytest.raises(AttributeError):
        r.lam = 1.0
    assert not r.psi.flags.writeable
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.route(X3, 0.125).tolist() == [1, 0, 1] and r2.models == MODELS
    with pytest.raises(ValueError, match=r"psi has shape \(2, 3\)"):
        _router(psi=PSI[:2])
    with pytest.raises(ValueError, match="costs must be finite"):
        _router(costs=[1.0, -2.0, 4.0])
    with pytest.raises(ValueError, match="duplicate model names"):
        _router(models=("a", "a", "c"))


def test_a_shrinking_router_routes_by_shrunk_cells_and_shrinks_a_new_row_alike():
    from uniroute.routers.cluster.psi import shrunk_values

    counts = np.array([[1, 10, 10], [10, 10, 10], [10, 10, 10]])
    r = _router(psi_counts=counts, shrinkage=4.0)
    np.testing.assert_allclose(r.routing_psi, shrunk_values(PSI, counts, 4.0))
    np.testing.assert_array_equal(r.psi, PSI)  # the measured cells are kept
    np.testing.assert_allclose(r.gamma(X3), r.routing_psi.T)
    assert r.kind == "kmeans_shrunk" and _router().kind == "kmeans"
    r2 = r.with_model("d", np.array([0.0, 1.0, 0.0]), 1.0, counts=np.array([1, 1, 20]))
    # the newcomer's row is shrunk toward the pool prior of the router it joins, like every row
    np.testing.assert_allclose(r2.routing_psi, shrunk_values(r2.psi, r2.psi_counts, 4.0))
    # ... not toward its own mean alone
    assert not np.allclose(r2.routing_psi[3], shrunk_values(np.array([[0.0, 1.0, 0.0]]), [[1, 1, 20]], 4.0)[0])
    with pytest.raises(ValueError, match="needs psi_counts"):
        _router(psi_counts=None, shrinkage=1.0)


def test_budget_reference_of_a_one_hot_router_is_its_centroids_by_validation_count():
    r = _router(psi_counts=np.array([[2, 1, 0], [2, 1, 0], [1, 1, 0]]))
    np.testing.assert_array_equal(r.budget_reference(), CENTERS[[0, 0, 1]])
    assert r.lambda_for_budget(None, 1.0) == r.lambda_for_budget(CENTERS[[0, 0, 1]], 1.0)
