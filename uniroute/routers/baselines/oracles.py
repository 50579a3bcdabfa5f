"""Clairvoyant oracles (paper appendix "Hyper-parameter Choices"): an MLP and a matrix factorisation trained
with the labels of the very LLMs they route among, on train + val prompts. Upper bounds for comparison, not
admissible dynamic-pool routers.

Shapes: X (n, d) float32 embeddings; losses (n, M) float64 in [0, 1], NaN = no result."""

from __future__ import annotations

import logging

import numpy as np

from uniroute.routers.cluster.adam import Adam
from uniroute.routers.cluster.kmeans import as_float32_matrix

log = logging.getLogger(__name__)

# Both oracles predict every model's loss through sigmoid outputs, trained by Adam on the binary cross
# entropy over labelled cells only (soft labels: losses may be fractional). They are trained in numpy with
# hand-written gradients rather than torch: at batch 64 these networks are tiny, and torch's per-operation
# overhead made an epoch about 3x slower on one core; they run inside every evaluation trial.


class _MLPNet:
    """Logits (b, 1, M) of an MLP d -> h -> h -> M with ReLU; torch.nn.Linear's default initialisation."""

    def __init__(self, d: int, h: int, m: int, rng: np.random.Generator) -> None:
        def linear(fan_in: int, fan_out: int) -> tuple[np.ndarray, np.ndarray]:
            bound = 1 / np.sqrt(fan_in)
            return (rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32),
                    rng.uniform(-bound, bound, fan_out).astype(np.float32))

        self.params = [*linear(d, h), *linear(h, h), *linear(h, m)]

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, tuple]:
        w1, b1, w2, b2, w3, b3 = self.params
        a1 = np.maximum(x @ w1 + b1, 0)
        a2 = np.maximum(a1 @ w2 + b2, 0)
        return (a2 @ w3 + b3)[:, None, :], (x, a1, a2)

    def backward(self, cache: tuple, dlogits: np.ndarray) -> list[np.ndarray]:
        x, a1, a2 = cache
        _, _, w2, _, w3, _ = self.params
        dz = dlogits[:, 0, :]
        da2 = dz @ w3.T
        da2 *= a2 > 0
        da1 = da2 @ w2.T
        da1 *= a1 > 0
        return [x.T @ da1, da1.sum(0), a1.T @ da2, da2.sum(0), a2.T @ dz, dz.sum(0)]

    def weights(self, state: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(state[0], state[1]), (state[2], state[3]), (state[4], state[5])]


class _MatFacNets:
    """G factorisations of different ranks side by side, logits (b, G, M): x A_g B_g + bias_g.

    A holds every rank's columns, (d, sum r): one product x A serves all candidates.
    """

    def __init__(self, d: int, m: int, ranks: tuple[int, ...], rng: np.random.Generator) -> None:
        self.ranks, self.m = ranks, m
        self.offsets = np.cumsum((0, *ranks)).tolist()
        # Scaled so initial logits are O(1) whatever d and the rank.
        a = (rng.standard_normal((d, sum(ranks))) / np.sqrt(d)).astype(np.float32)
        bs = [(rng.standard_normal((r, m)) / np.sqrt(r)).astype(np.float32) for r in ranks]
        self.params = [a, *bs, np.zeros((len(ranks), m), dtype=np.float32)]

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, tuple]:
        a, *bs, bias = self.params
        z = x @ a  # (b, sum r)
        o = self.offsets
        logits = np.stack([z[:, o[g] : o[g + 1]] @ b for g, b in enumerate(bs)], axis=1) + bias
        return logits, (x, z)

    def backward(self, cache: tuple, dlogits: np.ndarray) -> list[np.ndarray]:
        x, z = cache
        _, *bs, _ = self.params
        o = self.offsets
        dz = np.concatenate([dlogits[:, g] @ b.T for g, b in enumerate(bs)], axis=1)
        dbs = [z[:, o[g] : o[g + 1]].T @ dlogits[:, g] for g in range(len(bs))]
        return [x.T @ dz, *dbs, dlogits.sum(0)]

    def factors(self, state: list[np.ndarray], g: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A (d, r), B (r, M), bias (M,)) of candidate g."""
        a, *bs, bias = state
        return a[:, self.offsets[g] : self.offsets[g + 1]].copy(), bs[g].copy(), bias[g].copy()


def _holdout_split(n: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(fit rows, held-out rows) of a seeded random split; at least one row on each side."""
    if n < 2:
        raise ValueError(f"an oracle needs at least 2 prompts to hold some out, got {n}")
    n_hold = min(n - 1, max(1, round(fraction * n)))
    perm = rng.permutation(n)
    return np.sort(perm[n_hold:]), np.sort(perm[:n_hold])


def _check_oracle_inputs(X: np.ndarray, losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """X as (n, d) float32 and losses as (n, M) float64 in [0, 1] (NaN = no label)."""
    X = as_float32_matrix(X)
    losses = np.asarray(losses, dtype=np.float64)
    if losses.ndim != 2 or losses.shape[0] != X.shape[0]:
        raise ValueError(f"losses {losses.shape} must be (n={X.shape[0]}, M)")
    lab = ~np.isnan(losses)
    if np.any((losses[lab] < 0) | (losses[lab] > 1)):
        raise ValueError("losses must lie in [0, 1]")
    return X, losses


def _masked_bce(logits: np.ndarray, y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(G,) mean binary cross entropy of logits (b, G, M) against soft labels y (b, M) over mask (b, M)."""
    # softplus(z) - y z, written overflow-free
    ce = np.maximum(logits, 0) - logits * y[:, None, :] + np.log1p(np.exp(-np.abs(logits)))
    return (ce * mask[:, None, :]).sum(axis=(0, 2)) / max(mask.sum(), 1.0)


def _masked_bce_grad(logits: np.ndarray, y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(b, G, M) gradient of each candidate's _masked_bce with respect to its logits."""
    # d(mean BCE)/d logit = (sigmoid(z) - y) * mask / labelled cells
    return (_sigmoid32(logits) - y[:, None, :]) * (mask / max(mask.sum(), 1.0))[:, None, :]


def _train_masked_bce(net, X: np.ndarray, losses: np.ndarray, *, epochs: int, lr: float, batch_size: int,
                      holdout: float, rng: np.random.Generator) -> tuple[list[list[np.ndarray]], np.ndarray]:
    """Adam on masked BCE; per candidate g, the parameters at the epoch with the best held-out loss.

    net.forward gives logits (b, G, M) for G candidates with disjoint parameters: their summed loss trains
    each exactly as if alone (Adam is per coordinate), in one pass over the data.
    """
    from threadpoolctl import threadpool_limits

    fit_rows, hold_rows = _holdout_split(X.shape[0], holdout, rng)
    lab = ~np.isnan(losses)
    fit_rows = fit_rows[lab[fit_rows].any(axis=1)]  # an unlabelled prompt carries no gradient
    if fit_rows.size == 0 or not lab[hold_rows].any():
        raise ValueError("the oracle needs labels both in its fitting rows and in its held-out rows")
    y = np.where(lab, losses, 0.0).astype(np.float32)
    mask = lab.astype(np.float32)
    opt = Adam(net.params, lr)
    best_loss: np.ndarray | None = None
    best_state: list[list[np.ndarray]] = []
    with threadpool_limits(limits=1):  # the cores are shared: single-threaded BLAS
        for _ in range(epochs):
            order = fit_rows[rng.permutation(fit_rows.size)]
            for start in range(0, order.size, batch_size):
                idx = order[start : start + batch_size]
                yb, mb = y[idx], mask[idx]
                logits, cache = net.forward(X[idx])
                opt.step(net.backward(cache, _masked_bce_grad(logits, yb, mb)))
            held = _masked_bce(net.forward(X[hold_rows])[0], y[hold_rows], mask[hold_rows])  # (G,)
            if best_loss is None:
                best_loss, best_state = np.full(held.size, np.inf), [[] for _ in range(held.size)]
            improved = np.nonzero(held < best_loss)[0]
            if improved.size:
                snapshot = [p.copy() for p in net.params]
                for g in improved:
                    best_loss[g], best_state[g] = held[g], snapshot
    return best_state, best_loss  # type: ignore[return-value]  # set by the first epoch


class OracleMLP:
    """Clairvoyant MLP (2 hidden layers of 100, ReLU, sigmoid outputs) predicting every model's loss."""

    def __init__(self, hidden: int = 100, epochs: int = 30, lr: float = 1e-3, batch_size: int = 64,
                 holdout: float = 0.1, random_state: int = 0) -> None:
        self.hidden, self.epochs, self.lr, self.batch_size = hidden, epochs, lr, batch_size
        self.holdout, self.random_state = holdout, random_state

    def fit(self, X: np.ndarray, losses: np.ndarray) -> OracleMLP:
        """Fit on X (n, d) and losses (n, M); keep the epoch with the best held-out log loss."""
        X, losses = _check_oracle_inputs(X, losses)
        rng = np.random.default_rng(self.random_state)
        net = _MLPNet(X.shape[1], self.hidden, losses.shape[1], rng)
        # The paper keeps "the checkpoint with the best quality metric on the validation set" without naming
        # the metric; held-out log loss scores gamma at every lambda rather than at one budget.
        states, held = _train_masked_bce(net, X, losses, epochs=self.epochs, lr=self.lr,
                                         batch_size=self.batch_size, holdout=self.holdout, rng=rng)
        self.weights_ = net.weights(states[0])
        self.heldout_log_loss_ = float(held[0])
        log.info("oracle MLP: held-out log loss %.4f", self.heldout_log_loss_)
        return self

    def gamma(self, X: np.ndarray) -> np.ndarray:
        """(n, M) predicted loss of each model."""
        (w1, b1), (w2, b2), (w3, b3) = self.weights_
        X = as_float32_matrix(X, w1.shape[0])
        h = np.maximum(X @ w1 + b1, 0)
        h = np.maximum(h @ w2 + b2, 0)
        return _sigmoid(h @ w3 + b3)


class OracleMatFac:
    """Clairvoyant matrix factorisation: loss logits = phi(x) A (d x r) B (r x M) + b; r chosen on held-out data."""

    def __init__(self, ranks: tuple[int, ...] = (4, 8, 16, 32, 64), epochs: int = 30, lr: float = 1e-3,
                 batch_size: int = 64, holdout: float = 0.1, random_state: int = 0) -> None:
        if not ranks or min(ranks) < 1:
            raise ValueError(f"ranks must be positive, got {ranks}")
        self.ranks, self.epochs, self.lr, self.batch_size = tuple(ranks), epochs, lr, batch_size
        self.holdout, self.random_state = holdout, random_state

    def fit(self, X: np.ndarray, losses: np.ndarray) -> OracleMatFac:
        """Fit every candidate rank side by side; keep the (rank, epoch) with the best held-out log loss."""
        X, losses = _check_oracle_inputs(X, losses)
        rng = np.random.default_rng(self.random_state)
        # A per-model bias is a constant input feature; the paper's A.B form has none, but without it the
        # low-rank part must spend a dimension on each model's base rate.
        net = _MatFacNets(X.shape[1], losses.shape[1], self.ranks, rng)
        states, held = _train_masked_bce(net, X, losses, epochs=self.epochs, lr=self.lr,
                                         batch_size=self.batch_size, holdout=self.holdout, rng=rng)
        g = int(np.argmin(held))
        self.A_, self.B_, self.bias_ = net.factors(states[g], g)  # (d, r), (r, M), (M,)
        self.rank_ = self.ranks[g]
        self.heldout_log_loss_ = float(held[g])
        self.heldout_log_loss_by_rank_ = dict(zip(self.ranks, held.tolist(), strict=True))
        log.info("oracle MatFac: rank %d, held-out log loss %.4f", self.rank_, self.heldout_log_loss_)
        return self

    def gamma(self, X: np.ndarray) -> np.ndarray:
        """(n, M) predicted loss of each model."""
        X = as_float32_matrix(X, self.A_.shape[0])
        return _sigmoid((X @ self.A_) @ self.B_ + self.bias_)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """Logistic function in float64, overflow-free."""
    return 0.5 * (1.0 + np.tanh(0.5 * z.astype(np.float64)))


def _sigmoid32(z: np.ndarray) -> np.ndarray:
    """Logistic function in the dtype of z (float32 in training), overflow-free."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))
