"""Per-cluster model costs (routers.cluster.cluster_costs): a cost cap checks its expected mean cost on what each model
costs in each cluster (long prompts cost more on every model), while the rule still ranks by the model's one
cost; the scale travels with the stored router, follows pool edits and repricing, and a router stored without
it caps on each model's one cost as before."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from uniroute.routers.budgets.cost_cap import lambda_for_max_cost
from uniroute.routers.cluster.cluster_costs import cost_frame_of, cost_scale
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.learned_map import fit_learned_map
from uniroute.routers.knn.neighbours import KnnRouter
from uniroute.routers.router import Router
from uniroute.routers.serialize import router_from_bytes, router_to_bytes

CENTERS = np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32)
COSTS = np.array([1.0, 10.0, 5.0])  # cheap, big, mid
PSI = np.array([[0.1, 0.9], [0.5, 0.1], [0.6, 0.6]])
# Cluster 1 holds the long prompts: every model costs three times what it costs on cluster 0.
SCALE = np.array([[0.5, 1.5]] * 3)
X = np.repeat(CENTERS, [50, 50], axis=0)


def _router(scale: np.ndarray | None = SCALE) -> Router:
    return Router("emb", ("cheap", "big", "mid"), COSTS, PSI, Centroids(CENTERS), cost_scale=scale)


def _expected(router: Router, lam: float) -> float:
    """Expected mean cost per prompt on X of what the router routes at lam, per cluster."""
    chosen, clusters = router.route(X, lam), router.assigner.assign(X)
    return float((router.costs[chosen] * SCALE[chosen, clusters]).mean())


def test_the_scale_is_each_cells_mean_cost_over_the_models_mean_and_one_where_nothing_is_known():
    costs = np.array([[1.0, 0.0, np.nan], [3.0, 0.0, np.nan], [2.0, 0.0, 4.0], [2.0, 0.0, np.nan]])
    frame = cost_frame_of(np.array([0, 1, 1, 1]), costs, ["a", "free", "one"])
    scale = cost_scale(frame, ["a", "free", "one", "unseen"], 3)
    # a: mean 2; cluster 0 costs 1, cluster 1 costs 7/3; cluster 2 has no row (its mean).
    np.testing.assert_allclose(scale[0], [0.5, (7 / 3) / 2, 1.0])
    np.testing.assert_array_equal(scale[1:], np.ones((3, 3)))  # costs nothing, one cell only (=1), no rows
    with pytest.raises(ValueError, match=r"cluster ids must lie in \[0, 1\)"):
        cost_scale(frame, ["a"], 1)


def test_a_cap_is_checked_on_per_cluster_costs_while_the_rule_ranks_by_one_cost():
    plain, scaled = _router(None), _router()
    cap = 6.0
    # On the model's one cost, lambda 0 fits (cheap on cluster 0, big on cluster 1: 5.5), yet the long prompts
    # make it 7.75: the one-cost cap overspends.
    assert lambda_for_max_cost(plain, X, cap) == 0.0 and _expected(plain, 0.0) > cap
    lam = lambda_for_max_cost(scaled, X, cap)
    assert lam > 0 and _expected(scaled, lam) <= cap * (1 + 1e-12)
    # The smallest such lambda: just below it the per-cluster cost breaks the cap.
    assert _expected(scaled, lam * (1 - 1e-9)) > cap
    # Routing itself is the paper's rule on each model's one cost: the scale changes no decision at a lambda.
    for g in (0.0, lam, 0.05, 1.0):
        np.testing.assert_array_equal(scaled.route(X, g), plain.route(X, g))
    assert lambda_for_max_cost(scaled, X, 10.0) == 0.0  # every routing fits a cap at the dearest cost


def test_a_one_hot_routers_cap_rows_are_its_clusters_cells():
    scaled = _router()
    rows, weights, cells = scaled.cap_rows(X, np.arange(3))
    assert cells.shape == (2, 3) and weights.tolist() == [50, 50]
    np.testing.assert_allclose(cells, (COSTS[:, None] * SCALE).T)


def test_the_stored_router_keeps_its_scale_and_a_router_stored_before_it_caps_on_one_cost():
    back = router_from_bytes(router_to_bytes(_router()))
    np.testing.assert_array_equal(back.cost_scale, SCALE)
    assert lambda_for_max_cost(back, X, 6.0) == lambda_for_max_cost(_router(), X, 6.0)
    # A file written before the field: no `cost_scale` array at all.
    with np.load(io.BytesIO(router_to_bytes(_router())), allow_pickle=False) as saved:
        arrays = {name: saved[name] for name in saved.files if name != "cost_scale"}
    assert json.loads(str(arrays["header"]))["version"] == 3
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    old = router_from_bytes(buffer.getvalue())
    assert old.cost_scale is None and lambda_for_max_cost(old, X, 6.0) == 0.0


def test_pool_edits_and_prices_keep_the_scale_on_its_models():
    scaled = _router()
    joined = scaled.with_model("new", np.array([0.2, 0.2]), 2.0)
    np.testing.assert_array_equal(joined.cost_scale, np.vstack([SCALE, [1.0, 1.0]]))  # its mean until measured
    refreshed = joined.with_model("big", PSI[1], 10.0)
    np.testing.assert_array_equal(refreshed.cost_scale[1], [1.0, 1.0])  # measured anew when stored
    np.testing.assert_array_equal(scaled.without_model("big").cost_scale, SCALE[[0, 2]])
    # A new price scales the model's cells with it (replay --prices, a per-call price in force).
    repriced = replace(scaled, costs=COSTS * 2)
    np.testing.assert_allclose(repriced.cap_rows(X, np.arange(3))[2], (2 * COSTS[:, None] * SCALE).T)
    with pytest.raises(ValueError, match="cost_scale must be"):
        _router(np.ones((3, 1)))
    frame = pd.DataFrame({"model": ["cheap", "cheap"], "cluster": [0, 1], "cost_sum": [1.0, 3.0], "n": [1, 1]})
    np.testing.assert_allclose(scaled.with_cluster_costs(frame).cost_scale[0], [0.5, 1.5])


def test_a_knn_router_keeps_each_models_one_cost():
    refs = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], dtype=np.float32)
    refs /= np.linalg.norm(refs, axis=1, keepdims=True)
    labels = np.array([[0.9, 0.8, 0.2, 0.3], [0.1, 0.2, 0.1, 0.2]])
    knn = KnnRouter("emb", ("cheap", "dear"), np.array([1.0, 4.0]), labels, refs, ("p0", "p1", "p2", "p3"), 2)
    frame = pd.DataFrame({"model": ["dear", "dear"], "cluster": [0, 1], "cost_sum": [1.0, 9.0], "n": [1, 1]})
    assert knn.with_cluster_costs(frame) is knn
    rows, weights, cells = knn.cap_rows(refs, np.arange(2))
    assert cells is None and rows.shape == (4, 2)
    lam = lambda_for_max_cost(knn, refs, 2.5)
    assert float(knn.costs[knn.route(refs, lam)].mean()) <= 2.5


def test_a_soft_map_caps_on_its_membership_times_the_cells():
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(300, 4)).astype(np.float32)
    kind = (Xs[:, 0] <= 0).astype(int)
    losses = np.stack([kind, 1 - kind], axis=1).astype(float)
    psi = np.array([[0.0, 1.0], [1.0, 0.0]])
    lm = fit_learned_map(Xs, losses, psi, seed=0, epochs=2)
    scale = np.array([[0.5, 1.5], [0.8, 1.2]])
    soft = Router("emb", ("a", "b"), np.array([1.0, 2.0]), psi, lm, reference=Xs, cost_scale=scale)
    rows, weights, cells = soft.cap_rows(Xs, np.arange(2))
    np.testing.assert_allclose(cells, lm.membership(Xs).astype(np.float64) @ (np.array([1.0, 2.0])[:, None] * scale).T)
    assert rows.shape == cells.shape == (300, 2)
    lam = lambda_for_max_cost(soft, Xs, 1.4)
    chosen = soft.route(Xs, lam)
    assert float(cells[np.arange(300), chosen].mean()) <= 1.4 * (1 + 1e-12)
