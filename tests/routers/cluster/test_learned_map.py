import pickle

import numpy as np
import pytest

from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.learned_map import LearnedMap, fit_learned_map
from uniroute.routers.router import Router

NAN = np.nan
# Two training LLMs and K = 2 clusters: A is good on cluster 0 and bad on cluster 1, B the reverse.
PSI = np.array([[0.1, 0.9], [0.9, 0.1]])


def _data(n=600, seed=0):
    """Prompts of type 0 (x0 > 0: A right, B wrong) and type 1 (the reverse), some labels missing."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    kind = (X[:, 0] <= 0).astype(int)
    losses = np.stack([kind, 1 - kind], axis=1).astype(float)
    losses[rng.uniform(size=losses.shape) < 0.1] = NAN
    losses[:5] = NAN  # prompts without any label are ignored
    return X, losses, kind


def test_learned_map_learns_the_cluster_structure():
    X, losses, kind = _data()
    lm = fit_learned_map(X, losses, PSI, seed=0)
    assert isinstance(lm, LearnedMap) and lm.k == 2 and lm.dim == 6
    Xt, _, kind_t = _data(seed=1)
    phi = lm.membership(Xt)
    assert phi.shape == (600, 2)
    np.testing.assert_allclose(phi.sum(axis=1), 1.0, rtol=1e-5)
    assert (phi >= 0).all()
    assert (phi.argmax(axis=1) == kind_t).mean() > 0.95
    # As a router: A (cheap) on type-0 prompts, B on type-1 prompts, at lambda 0.
    r = Router("e", ("A", "B"), np.array([1.0, 1.0]), PSI, lm)
    assert (r.route(Xt) == kind_t).mean() > 0.95


def test_learned_map_is_seeded():
    X, losses, _ = _data(n=200)
    a = fit_learned_map(X, losses, PSI, seed=4, epochs=2)
    b = fit_learned_map(X, losses, PSI, seed=4, epochs=2)
    c = fit_learned_map(X, losses, PSI, seed=5, epochs=2)
    np.testing.assert_array_equal(a.w1, b.w1)
    np.testing.assert_array_equal(a.b3, b.b3)
    assert not np.array_equal(a.w1, c.w1)


def test_gradients_match_finite_differences():
    from uniroute.routers.cluster import learned_map_net as net_mod

    rng = np.random.default_rng(0)
    net = net_mod.LearnedMapNet(5, 3, rng)
    net.params = [p.astype(np.float64) + 0.1 * rng.standard_normal(p.shape) for p in net.params]
    x, y = rng.standard_normal((9, 5)), rng.random((9, 2))
    mask = (rng.random((9, 2)) < 0.8).astype(float)
    psi_t = rng.uniform(0.1, 0.9, (3, 2))

    def loss() -> float:
        g0, b0, w1, c1, g1, b1, w2, c2, g2, b2, w3, c3 = net.params

        def bn(a, g, b):
            return (a - a.mean(0)) / np.sqrt(a.var(0) + net_mod.BN_EPS) * g + b

        h = np.maximum(bn(bn(x, g0, b0) @ w1 + c1, g1, b1), 0) @ w2 + c2
        z = np.maximum(bn(h, g2, b2), 0) @ w3 + c3
        e = np.exp(z - z.max(1, keepdims=True))
        gamma = (e / e.sum(1, keepdims=True)) @ psi_t
        return float((-(y * np.log(gamma) + (1 - y) * np.log1p(-gamma)) * mask).sum() / mask.sum())

    grads = net.train_step_grads(x, y, mask, psi_t)
    for p, g in zip(net.params, grads, strict=True):
        for flat in rng.choice(p.size, min(p.size, 12), replace=False):  # a sample of every parameter's entries
            idx = np.unravel_index(flat, p.shape)
            p0 = p[idx]
            p[idx] = p0 + 1e-6
            up = loss()
            p[idx] = p0 - 1e-6
            numeric = (up - loss()) / 2e-6
            p[idx] = p0
            assert g[idx] == pytest.approx(numeric, abs=1e-7)


def test_folded_map_equals_the_network_in_inference_mode():
    from uniroute.routers.cluster.learned_map_net import LearnedMapNet, _softmax

    X, losses, _ = _data(n=300)
    net = LearnedMapNet(6, 2, np.random.default_rng(1))
    stats = net.population_stats(X)
    lm = LearnedMap(**net.folded(stats))
    np.testing.assert_allclose(lm.membership(X), _softmax(net.logits(X, stats)), rtol=1e-4, atol=1e-6)


def test_batchnorm_statistics_are_those_of_the_training_set():
    from uniroute.routers.cluster.learned_map_net import LearnedMapNet

    X, _, _ = _data(n=300)
    stats = LearnedMapNet(6, 2, np.random.default_rng(1)).population_stats(X)
    np.testing.assert_allclose(stats.mean[0], X.mean(axis=0), atol=1e-5)
    np.testing.assert_allclose(stats.var[0], X.var(axis=0), rtol=1e-4)


def test_fractional_losses_are_soft_labels():
    X, losses, _ = _data(n=300)
    soft = np.where(np.isnan(losses), NAN, 0.25 + 0.5 * np.nan_to_num(losses))  # 0.25 / 0.75
    lm = fit_learned_map(X, soft, PSI, seed=0)
    assert np.isfinite(lm.membership(X)).all()


def test_learned_map_pickles_as_plain_arrays():
    X, losses, _ = _data(n=200)
    lm = fit_learned_map(X, losses, PSI, seed=0, epochs=1)
    blob = pickle.dumps(Router("e", ("A", "B"), np.ones(2), PSI, lm))
    np.testing.assert_array_equal(pickle.loads(blob).assigner.membership(X), lm.membership(X))
    assert not lm.w1.flags.writeable


def test_learned_map_with_a_k_means_psi_of_more_clusters():
    # The usual set-up: Psi of the training LLMs on K k-means clusters of the training prompts.
    from uniroute.routers.cluster.kmeans import fit_centroids
    from uniroute.routers.cluster.psi import psi_from_losses

    X, losses, _ = _data(n=400)
    cents: Centroids = fit_centroids(X, 5, seed=0)
    psi = psi_from_losses(cents.assign(X), losses, 5, ("A", "B"))
    lm = fit_learned_map(X, losses, psi.values, seed=0, epochs=2)
    assert lm.k == 5
    r = Router("e", psi.models, np.array([1.0, 2.0]), psi.values, lm)
    lam = r.lambda_for_budget(X, 0.75)
    assert np.array([1.0, 2.0])[r.route(X, lam)].mean() <= 1.5 + 1e-12


def test_learned_map_rejects_bad_inputs():
    X, losses, _ = _data(n=50)
    with pytest.raises(ValueError, match=r"psi_values \(3, 2\) must be \(M=2, K\)"):
        fit_learned_map(X, losses, np.zeros((3, 2)), seed=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fit_learned_map(X, losses * 2, PSI, seed=0)
    with pytest.raises(ValueError, match="at least 2 labelled"):
        fit_learned_map(X, np.full_like(losses, NAN), PSI, seed=0)


def test_a_builds_learned_map_lines_say_which_map_each_is(caplog):
    """A build fits the full map and two half maps of one K; the halves' lines used to read as one line twice."""
    from uniroute.selection.candidates import CandidateFits, TuningData

    X, losses, _ = _data(n=200)
    Xv, val_losses, _ = _data(n=40, seed=1)
    costs = np.where(np.isnan(losses), np.nan, 1.0)
    val_costs = np.where(np.isnan(val_losses), np.nan, 1.0)
    fits = CandidateFits(TuningData(X, np.nan_to_num(losses, nan=0.5), np.nan_to_num(costs, nan=1.0), Xv,
                                    val_losses, val_costs, seed=0), learned_map_epochs=1)
    with caplog.at_level("INFO", logger="uniroute.routers.cluster.learned_map"):
        fits.heldout_phi(2)
        fits.learned_map(2)
    lines = [r.getMessage() for r in caplog.records if r.name == "uniroute.routers.cluster.learned_map"]
    assert len(lines) == len(set(lines)) == 3, lines
    assert lines[0].startswith("learned map (training half 1 of 2, routes the other): K=2 on ")
    assert lines[2] == "learned map (all training prompts): K=2 on 200 prompts, 1 epochs"
