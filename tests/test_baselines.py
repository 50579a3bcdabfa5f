import numpy as np
import pytest

from uniroute import baselines
from uniroute.baselines import (
    OracleMatFac,
    OracleMLP,
    knn_gamma,
    zero_router_curve_points,
    zero_router_hull,
    zero_router_mixture,
)
from uniroute.cluster import Centroids
from uniroute.route import Router

NAN = np.nan


def test_zero_router_hull_by_hand():
    # (cost, quality): m0 (1, .2), m1 (2, .6), m2 (3, .7), m3 (4, .9), m4 (5, .85), m5 (2, .5)
    # m5: same cost as m1, worse -> off. m4: dearer and worse than m3 -> off (non-decreasing part).
    # m2: below the chord m1-m3 (quality .75 at cost 3) -> off. m1: above the chord m0-m3 (.433 at 2) -> on.
    costs = np.array([1, 2, 3, 4, 5, 2], dtype=float)
    quality = np.array([0.2, 0.6, 0.7, 0.9, 0.85, 0.5])
    assert zero_router_hull(costs, 1 - quality).tolist() == [0, 1, 3]


def test_zero_router_hull_drops_collinear_and_keeps_first_of_duplicates():
    costs = np.array([3.0, 1.0, 2.0, 1.0])
    losses = 1 - np.array([0.75, 0.25, 0.5, 0.25])  # collinear; m1 and m3 identical
    assert zero_router_hull(costs, losses).tolist() == [1, 0]
    # A single model, and a cheapest model that is also the best, are hulls of one point.
    assert zero_router_hull(np.array([2.0]), np.array([0.3])).tolist() == [0]
    assert zero_router_hull(np.array([1.0, 2.0]), np.array([0.1, 0.4])).tolist() == [0]


def test_k1_uniroute_only_ever_picks_hull_models():
    # Paper, appendix proposition: with K = 1 the plug-in rule returns a model on the hull, at every lambda.
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = 8
        costs, losses = rng.uniform(0.1, 5, m), rng.uniform(0, 1, m)
        hull = set(zero_router_hull(costs, losses).tolist())
        r = Router("e", tuple(map(str, range(m))), costs, losses[:, None], Centroids(np.zeros((1, 2))))
        picked = {int(r.cluster_table(lam)[0]) for lam in np.concatenate([[0], np.geomspace(1e-4, 100, 400)])}
        assert picked <= hull
        assert len(picked) == len(hull)  # and the sweep visits every hull vertex


def test_zero_router_mixture_matches_the_paper():
    hull = np.array([0, 1, 3])
    costs = np.array([1.0, 2.0, 9.0, 4.0])
    # B = 3 between c(m1) = 2 and c(m3) = 4: p(m1) = (4 - 3) / (4 - 2) = 1/2; expected cost = 3.
    m1, m2, p1 = zero_router_mixture(hull, costs, 3.0)
    assert (m1, m2, p1) == (1, 3, 0.5)
    assert p1 * costs[m1] + (1 - p1) * costs[m2] == 3.0
    m1, m2, p1 = zero_router_mixture(hull, costs, 1.5)
    assert (m1, m2) == (0, 1) and p1 == pytest.approx(0.5)
    assert zero_router_mixture(hull, costs, 2.0) == (1, 3, 1.0)  # c(m1) <= B: all on m1
    assert zero_router_mixture(hull, costs, 0.5) == (0, 0, 1.0)
    assert zero_router_mixture(hull, costs, 7.0) == (3, 3, 1.0)


def test_zero_router_curve_points_are_hull_models_test_points():
    hull = np.array([0, 1, 3])
    test_costs = np.array([0.1, 0.3, 0.9, 1.0])
    test_scores = np.array([0.4, 0.6, 0.2, 0.7])
    c, s = zero_router_curve_points(hull, test_costs, test_scores)
    assert c.tolist() == [0.1, 0.3, 1.0] and s.tolist() == [0.4, 0.6, 0.7]
    # Mixing m1 and m3 at p gives the expected test point on the segment between their vertices.
    p = 0.25
    mix = (p * test_costs[1] + (1 - p) * test_costs[3], p * test_scores[1] + (1 - p) * test_scores[3])
    assert np.interp(mix[0], c, s) == pytest.approx(mix[1])


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
    monkeypatch.setattr(baselines, "KNN_BLOCK", 7)
    d2 = ((X_q[:, None].astype(np.float64) - X_ref[None]) ** 2).sum(-1)
    nn = np.argsort(d2, axis=1)[:, :5]
    np.testing.assert_allclose(knn_gamma(X_q, X_ref, losses, 5), losses[nn].mean(axis=1))


def _numeric_grad(f, params, eps=1e-6):
    grads = []
    for p in params:
        g = np.zeros_like(p)
        for i in np.ndindex(p.shape):
            old = p[i]
            p[i] = old + eps
            up = f()
            p[i] = old - eps
            down = f()
            p[i] = old
            g[i] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("which", ["mlp", "matfac"])
def test_oracle_gradients_match_finite_differences(which):
    rng = np.random.default_rng(1)
    net = (baselines._MLPNet(5, 4, 3, rng) if which == "mlp" else baselines._MatFacNets(5, 3, (1, 2), rng))
    net.params = [p.astype(np.float64) for p in net.params]
    if which == "matfac":
        net.params[-1] += rng.normal(size=net.params[-1].shape)
    x = rng.normal(size=(6, 5))
    y = rng.uniform(size=(6, 3))
    mask = (rng.uniform(size=(6, 3)) < 0.7).astype(np.float64)

    def loss():
        return baselines._masked_bce(net.forward(x)[0], y, mask).sum()

    logits, cache = net.forward(x)
    analytic = net.backward(cache, baselines._masked_bce_grad(logits, y, mask))
    for a, n in zip(analytic, _numeric_grad(loss, net.params), strict=True):
        np.testing.assert_allclose(a, n, rtol=1e-5, atol=1e-7)


def _synthetic(n=1500, d=8, m=3, seed=0):
    """Model j's loss probability rises with embedding coordinate j; 20% of labels missing."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    p = 1 / (1 + np.exp(-4 * X[:, :m]))
    losses = (rng.uniform(size=p.shape) < p).astype(float)
    losses[rng.uniform(size=p.shape) < 0.2] = NAN
    return X, losses, p


@pytest.mark.parametrize("cls", [OracleMLP, OracleMatFac])
def test_oracles_learn_and_are_seeded(cls):
    X, losses, p = _synthetic()
    kw = {"epochs": 8, "random_state": 3}
    oracle = cls(**kw).fit(X[:1000], losses[:1000])
    g = oracle.gamma(X[1000:])
    assert g.shape == (500, 3) and np.all((g > 0) & (g < 1))
    # It recovers the true loss probabilities on unseen prompts.
    assert np.corrcoef(g.ravel(), p[1000:].ravel())[0, 1] > 0.9
    # The same seed gives the same oracle.
    np.testing.assert_array_equal(cls(**kw).fit(X[:1000], losses[:1000]).gamma(X[1000:]), g)
    assert np.isfinite(oracle.heldout_log_loss_)


def test_matfac_picks_a_rank_among_candidates():
    X, losses, _ = _synthetic(n=600)
    o = OracleMatFac(ranks=(1, 3), epochs=5).fit(X, losses)
    assert o.rank_ in (1, 3) and o.A_.shape == (8, o.rank_) and o.B_.shape == (o.rank_, 3)
    assert o.heldout_log_loss_ == min(o.heldout_log_loss_by_rank_.values())


def test_oracles_refuse_bad_labels():
    X = np.zeros((4, 2), dtype=np.float32)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        OracleMLP().fit(X, np.full((4, 1), 2.0))
    with pytest.raises(ValueError, match="labels"):
        OracleMLP(epochs=1).fit(X, np.full((4, 1), NAN))
