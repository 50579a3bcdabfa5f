import numpy as np
import pytest

from uniroute.routers.baselines import oracles
from uniroute.routers.baselines.oracles import OracleMatFac, OracleMLP

NAN = np.nan


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
    net = (oracles._MLPNet(5, 4, 3, rng) if which == "mlp" else oracles._MatFacNets(5, 3, (1, 2), rng))
    net.params = [p.astype(np.float64) for p in net.params]
    if which == "matfac":
        net.params[-1] += rng.normal(size=net.params[-1].shape)
    x = rng.normal(size=(6, 5))
    y = rng.uniform(size=(6, 3))
    mask = (rng.uniform(size=(6, 3)) < 0.7).astype(np.float64)

    def loss():
        return oracles._masked_bce(net.forward(x)[0], y, mask).sum()

    logits, cache = net.forward(x)
    analytic = net.backward(cache, oracles._masked_bce_grad(logits, y, mask))
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
