"""The terms of a decision (routers.explain): by hand on tiny routers of each shape (one-hot with counts,
count-aware Psi, a soft map, K-NN), rank 1 is what `route` chooses, ties rank as the rule breaks them."""

from __future__ import annotations

import numpy as np

from tests.routers.test_router import X3, SoftAssigner, _router
from uniroute.routers.cluster.psi import cell_frame
from uniroute.routers.explain import fallback_lists, ranked_order
from uniroute.routers.knn.neighbours import KnnRouter


def test_terms_by_hand_on_a_one_hot_router_with_ties():
    r = _router()
    terms = r.route_terms(X3, lam=0.125)
    # lambda = 1/8: cluster 0 totals a .625, b .5, c .5 (b and c tie: the cheaper b first, then c, then a).
    assert [[terms.models[p] for p in row] for row in terms.order] == [["b", "c", "a"], ["a", "b", "c"],
                                                                        ["b", "a", "c"]]
    assert terms.chosen().tolist() == r.route(X3, lam=0.125).tolist()
    first = terms.explained()[0]
    assert [t["rank"] for t in first] == [1, 2, 3]
    assert {k: v for k, v in first[0].items() if not k.startswith("error_")} == {
        "rank": 1, "model": "b", "expected_error": 0.25, "cost": 2.0, "lam_cost": 0.25, "total": 0.5,
        "latency_s": None}
    # The interval is the measured cell's 95% Wilson interval (10 prompts behind every cell here).
    cells = cell_frame(r.models, r.psi, r.psi_counts).set_index(["model", "cluster"])
    assert first[0]["error_lo"] == cells.loc[("b", 0), "error_lo"] and first[0]["error_hi"] == cells.loc[("b", 0),
                                                                                                        "error_hi"]
    summary = terms.summary()
    assert summary["model"].tolist() == ["b", "a", "b"]
    assert summary["fallbacks"].tolist() == [["c", "a"], ["b", "c"], ["a", "c"]]
    assert summary["expected_score"].tolist() == [0.75, 0.75, 0.5] and summary["expected_cost"].tolist() == [2, 1, 2]


def test_a_pool_narrows_the_candidates_and_no_counts_means_no_interval():
    r = _router(psi_counts=None)
    terms = r.route_terms(X3, lam=0.0, pool=["c", "a"])
    assert terms.models == ("a", "c") and terms.error_lo is None
    assert all(t["error_lo"] is None and t["error_hi"] is None for row in terms.explained() for t in row)
    assert terms.chosen().tolist() == r.route(X3, 0.0, ["c", "a"]).tolist()


def test_count_aware_psi_ranks_by_the_shrunk_error_it_routes_by():
    r = _router(psi_counts=np.array([[10, 1, 10], [10, 10, 10], [1, 10, 1]]), shrinkage=5.0)
    terms = r.route_terms(X3, lam=0.05)
    np.testing.assert_array_equal(terms.error, r.routing_psi[:, r.assigner.assign(X3)].T)
    assert not np.array_equal(terms.error, r.psi[:, r.assigner.assign(X3)].T)
    assert terms.chosen().tolist() == r.route(X3, lam=0.05).tolist()
    assert (terms.error_lo <= terms.error_hi).all()


def test_a_soft_map_weighs_the_cell_intervals_by_membership():
    r = _router(assigner=SoftAssigner(np.array([[2.0, -1.0, 0.5], [0.3, 1.5, -2.0]])))
    X = np.array([[0.2, 0.9], [-0.7, 0.1], [0.5, -0.4], [1.0, 1.0]], dtype=np.float32)
    for lam in (0.0, 0.1, 3.0):
        terms = r.route_terms(X, lam=lam)
        assert terms.chosen().tolist() == r.route(X, lam=lam).tolist()
        np.testing.assert_array_equal(terms.error, r.gamma(X))
    phi = r.assigner.membership(X)
    cells = cell_frame(r.models, r.psi, r.psi_counts)
    np.testing.assert_allclose(terms.error_lo, phi @ cells["error_lo"].to_numpy().reshape(3, 3).T)


def test_knn_terms_are_its_gamma_without_interval():
    labels = np.array([[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    refs = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], dtype=np.float32)
    r = KnnRouter("emb", ("cheap", "dear"), np.array([1.0, 4.0]), labels, refs, ("p0", "p1", "p2", "p3"), 1)
    X = refs + 0.01
    for lam in (0.0, 0.2, 1.0):
        terms = r.route_terms(X, lam=lam)
        assert terms.chosen().tolist() == r.route(X, lam=lam).tolist() and terms.error_lo is None
    # Exact ties at lambda 0 on p0 (both 0.0): the cheaper model ranks first.
    assert [terms.models[p] for p in r.route_terms(X[:1], 0.0).order[0]] == ["cheap", "dear"]


def test_ranked_order_breaks_ties_by_cost_then_index():
    total = np.array([[1.0, 1.0, 1.0, 0.5]])
    order = ranked_order(total, np.array([2.0, 1.0, 1.0, 9.0]), np.array([0, 3, 5, 7]))
    assert order.tolist() == [[3, 1, 2, 0]]


def test_fallback_lists_survive_colliding_keys():
    names = np.array(["a", "b", "c"], dtype=object)
    order = np.array([[0, 1, 2], [2, 1, 0], [0, 1, 2]])
    expected = [["b", "c"], ["b", "a"], ["b", "c"]]
    assert fallback_lists(names, order) == expected
    # Every row on one key (weights 0): the check sees the collision and builds each list from its own row.
    assert fallback_lists(names, order, np.zeros(3, dtype=np.int64)) == expected
