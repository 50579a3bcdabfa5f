import numpy as np
import pytest

from uniroute.routers.knn import neighbours as knn
from uniroute.routers.knn.neighbours import knn_gamma, knn_gammas, nearest_order

NAN = np.nan


def test_knn_gamma_by_hand_with_missing_labels():
    X_ref = np.array([[0, 0], [1, 0], [2, 0], [10, 0]], dtype=np.float32)
    losses = np.array([[0.0, 1.0, NAN], [1.0, NAN, NAN], [1.0, 0.0, 1.0], [0.0, 0.0, 0.5]])
    q = np.array([[0.4, 0.0], [9.0, 0.0]], dtype=np.float32)
    g = knn_gamma(q, X_ref, losses, k=2)
    # Query 0: neighbours refs 0, 1. Model 0 -> 0.5; model 1 -> only ref 0 labelled -> 1.0;
    # model 2 -> no labelled neighbour -> its overall mean over refs (1 + 0.5) / 2.
    # Query 1: neighbours refs 3, 2 -> 0.5, 0.0, 0.75.
    np.testing.assert_allclose(g, [[0.5, 1.0, 0.75], [0.5, 0.0, 0.75]])
    np.testing.assert_allclose(knn_gamma(q, X_ref, losses, k=4)[0], [0.5, 1 / 3, 0.75])
    with pytest.raises(ValueError, match=r"k must lie in \[1, 4\]"):
        knn_gamma(q, X_ref, losses, k=5)


def test_knn_gamma_matches_brute_force_across_blocks(monkeypatch):
    rng = np.random.default_rng(0)
    X_ref = rng.normal(size=(40, 3)).astype(np.float32)
    X_q = rng.normal(size=(25, 3)).astype(np.float32)
    losses = rng.uniform(size=(40, 4))
    monkeypatch.setattr(knn, "KNN_BLOCK", 7)
    d2 = ((X_q[:, None].astype(np.float64) - X_ref[None]) ** 2).sum(-1)
    nn = np.argsort(d2, axis=1)[:, :5]
    np.testing.assert_allclose(knn_gamma(X_q, X_ref, losses, 5), losses[nn].mean(axis=1))


# ---- K-NN gamma -------------------------------------------------------------------------------------------
def test_knn_gammas_skip_missing_labels_and_fall_back() -> None:
    X_ref = np.eye(4, dtype=np.float32)
    X_query = np.array([[1.0, 0.1, 0.0, 0.0]], dtype=np.float32)
    X_query /= np.linalg.norm(X_query)
    order = nearest_order(X_query, X_ref, 3)
    assert order[0, :2].tolist() == [0, 1]
    losses = np.array([[1.0, np.nan], [0.0, np.nan], [1.0, 1.0], [0.0, 0.0]])
    g = knn_gammas(order, losses, [1, 2, 3])
    # model 1 has no label on refs 0 and 1: its mean loss over the refs (0.5) until ref 2 enters at k = 3
    assert g[1][0].tolist() == [1.0, 0.5]
    assert g[2][0].tolist() == [0.5, 0.5]
    assert g[3][0].tolist() == [pytest.approx(2 / 3), 1.0]


# ---- K-NN as a router kind ---------------------------------------------------------------------------------
def _knn_router(k: int = 2):
    from uniroute.routers.knn.neighbours import KnnRouter

    # Four references on the unit circle; model "cheap" is right on the first two, "dear" on all.
    refs = np.array([[1, 0], [0.8, 0.6], [0, 1], [-1, 0]], dtype=np.float32)
    labels = np.array([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    return KnnRouter("emb", ("cheap", "dear"), np.array([1.0, 4.0]), labels, refs, ("p0", "p1", "p2", "p3"), k)


def test_knn_router_routes_by_its_label_table() -> None:
    r = _knn_router()
    q = np.array([[1, 0.1], [-0.9, 0.3]], dtype=np.float32)
    np.testing.assert_allclose(r.gamma(q), [[0.0, 0.0], [1.0, 0.0]])
    assert r.route_names(q).tolist() == ["cheap", "dear"]  # tie on the first prompt goes to the cheaper
    assert r.route_names(q, lam=1.0).tolist() == ["cheap", "cheap"]
    assert r.kind == "knn" and r.k == 2 and not r.one_hot
    # Budget 0.25 of the dearest model's cost: only the cheap model fits on average over the references.
    lam = r.lambda_for_budget(None, 0.25)
    assert r.costs[r.route(r.refs, lam)].mean() <= 1.0


def test_knn_router_onboards_a_model_by_its_labels_on_the_references() -> None:
    r = _knn_router()
    row = r.label_row(["p3", "p0", "zz"], np.array([0.0, 1.0, 0.0]))  # "zz" is not a reference: ignored
    np.testing.assert_array_equal(row, [1.0, np.nan, np.nan, 0.0])
    r2 = r.with_model("new", row, 0.5)
    assert r2.models == ("cheap", "dear", "new") and r2.labels.shape == (3, 4)
    q = np.array([[-0.9, 0.3]], dtype=np.float32)  # nearest references p3 and p2: "new" is right on p3
    assert r2.route_names(q).tolist() == ["new"]
    assert r2.without_model("new").models == r.models
    with pytest.raises(ValueError, match=r"no label on any reference"):
        r.with_model("blank", np.full(4, np.nan), 1.0)
    with pytest.raises(ValueError, match=r"expected \(4,\)"):
        r.with_model("short", np.zeros(3), 1.0)


def test_nearest_order_is_the_same_whether_sorted_fully_or_partitioned() -> None:
    rng = np.random.default_rng(3)
    X_ref = rng.normal(size=(40, 5)).astype(np.float32)
    X_ref[7] = X_ref[3]  # an exact tie: the lower index comes first
    X_q = rng.normal(size=(30, 5)).astype(np.float32)
    full = nearest_order(X_q, X_ref, 40)  # a full sort (k >= n_ref / 4)
    for k in (1, 5, 9):  # partition, then sort the k nearest
        np.testing.assert_array_equal(nearest_order(X_q, X_ref, k), full[:, :k])
    assert all(list(row).index(3) < list(row).index(7) for row in full)


def test_the_gammas_by_blocks_within_a_memory_budget_are_the_whole_ones(monkeypatch) -> None:
    """knn_gammas gathers (rows, k_max, M) labels per block: a small budget (one row a block) changes no number."""
    rng = np.random.default_rng(5)
    X_ref = rng.normal(size=(60, 4)).astype(np.float32)
    losses = np.where(rng.random((60, 3)) < 0.2, NAN, rng.random((60, 3)))
    order = nearest_order(rng.normal(size=(25, 4)).astype(np.float32), X_ref, 60)
    assert order.dtype == np.int16  # the orders a tuning keeps: a quarter of the bytes of int64, the same indices
    whole = knn_gammas(order, losses, [1, 7, 60])
    monkeypatch.setattr(knn, "GAMMA_BLOCK_BYTES", 1)
    blocked = knn_gammas(order, losses, [1, 7, 60])
    for k, gamma in whole.items():
        np.testing.assert_array_equal(blocked[k], gamma)


def test_the_index_type_holds_every_reference() -> None:
    """nearest_order's int16 holds up to 32,768 references (the last index 32,767); one more takes int32."""
    assert knn.index_dtype(2**15) == np.int16 and np.iinfo(np.int16).max == 2**15 - 1
    assert knn.index_dtype(2**15 + 1) == np.int32
    X_ref = np.zeros((2**15 + 1, 1), dtype=np.float32)
    X_ref[-1] = 1.0  # the nearest reference of a query at 1 is the last one: index 32,768
    order = nearest_order(np.ones((1, 1), dtype=np.float32), X_ref, 1)
    assert order.dtype == np.int32 and order[0, 0] == 2**15
