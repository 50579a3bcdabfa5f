"""Leave-one-out gamma: each prompt scored with its own labels left out, checked against refitting."""

import numpy as np
import pytest

from uniroute.routers.crossfit import loo_knn_gammas, loo_neighbour_order, loo_psi_gamma
from uniroute.routers.knn import knn_gammas
from uniroute.routers.psi import psi_from_losses, shrunk_values


@pytest.mark.parametrize("strength", [0.0, 2.5])
@pytest.mark.parametrize("soft", [False, True])
def test_loo_psi_gamma_equals_psi_refitted_without_the_prompt(strength: float, soft: bool) -> None:
    rng = np.random.default_rng(1)
    n, m, k = 30, 3, 5
    losses = (rng.random((n, m)) < 0.4).astype(float)
    losses[rng.random((n, m)) < 0.2] = np.nan
    cluster_of = rng.integers(0, k - 1, n)  # cluster k - 1 stays empty
    cluster_of[:2] = 0
    member = rng.dirichlet(np.ones(k), n) if soft else np.eye(k)[cluster_of]
    got = loo_psi_gamma(member, cluster_of, losses, k, strength)
    for i in range(n):
        keep = np.arange(n) != i
        psi = psi_from_losses(cluster_of[keep], losses[keep], k, ["a", "b", "c"])
        np.testing.assert_allclose(got[i], member[i] @ shrunk_values(psi.values, psi.counts, strength).T)


def test_loo_neighbours_never_include_the_prompt_itself() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(20, 4)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    order = loo_neighbour_order(X, 5, block=7)
    assert order.shape == (20, 5) and not (order == np.arange(20)[:, None]).any()
    losses = rng.random((20, 2))
    got = loo_knn_gammas(order, losses, [1, 3])
    sims = X @ X.T
    np.fill_diagonal(sims, -np.inf)
    nearest = np.argsort(-sims, axis=1)[:, :3]
    np.testing.assert_allclose(got[3], losses[nearest].mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(got[1], knn_gammas(order, losses, [1])[1])
