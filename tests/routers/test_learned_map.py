import pickle

import numpy as np
import pytest

from uniroute.routers.kmeans import Centroids
from uniroute.routers.learned_map import LearnedMap, export_network, fit_learned_map, train_network
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


def test_numpy_export_matches_the_torch_network_in_eval_mode():
    import torch

    X, losses, _ = _data(n=300)
    net = train_network(X, losses, PSI, seed=0, epochs=1, lr=0.005, batch_size=64)
    with torch.no_grad():
        expected = torch.softmax(net(torch.from_numpy(X)), dim=1).numpy()
    np.testing.assert_allclose(export_network(net).membership(X), expected, rtol=1e-4, atol=1e-6)


def test_batchnorm_statistics_are_those_of_the_training_set():
    X, losses, _ = _data(n=300)
    net = train_network(X, losses, PSI, seed=0, epochs=1, lr=0.005, batch_size=64)
    labelled = ~np.isnan(losses).all(axis=1)
    np.testing.assert_allclose(net[0].running_mean.numpy(), X[labelled].mean(axis=0), atol=1e-5)
    np.testing.assert_allclose(net[0].running_var.numpy(), X[labelled].var(axis=0), rtol=1e-4)


def test_fractional_losses_are_soft_labels():
    X, losses, _ = _data(n=300)
    soft = np.where(np.isnan(losses), NAN, 0.25 + 0.5 * np.nan_to_num(losses))  # 0.25 / 0.75
    lm = fit_learned_map(X, soft, PSI, seed=0)
    assert np.isfinite(lm.membership(X)).all()


def test_learned_map_pickles_without_torch():
    X, losses, _ = _data(n=200)
    lm = fit_learned_map(X, losses, PSI, seed=0, epochs=1)
    blob = pickle.dumps(Router("e", ("A", "B"), np.ones(2), PSI, lm))
    assert b"torch" not in blob
    np.testing.assert_array_equal(pickle.loads(blob).assigner.membership(X), lm.membership(X))
    assert not lm.w1.flags.writeable


def test_learned_map_with_a_k_means_psi_of_more_clusters():
    # The usual set-up: Psi of the training LLMs on K k-means clusters of the training prompts.
    from uniroute.routers.kmeans import fit_centroids
    from uniroute.routers.psi import psi_from_losses

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
