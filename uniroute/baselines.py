"""Baseline routers: ZeroRouter (cost/quality convex hull), K-NN over validation prompts, clairvoyant oracles.

Shapes: X (n, d) float32 embeddings; losses (n, M) float64 in [0, 1], NaN = no result; costs (M,).
The oracles (OracleMLP, OracleMatFac) are trained with the labels of the very LLMs they route among, on
train + val prompts: they are upper bounds for comparison, not admissible dynamic-pool routers.
"""

from __future__ import annotations

import logging

import numpy as np

from uniroute.cluster import as_float32_matrix

log = logging.getLogger(__name__)

KNN_BLOCK = 1024  # query rows per block: a (block, n_ref) float32 score matrix


# ---- ZeroRouter (paper appendix "Zero Routing") -------------------------------------------------------
def zero_router_hull(costs: np.ndarray, losses_mean: np.ndarray) -> np.ndarray:
    """Indices of models on the non-decreasing convex hull of (cost, quality = 1 - loss), by increasing cost."""
    costs = np.asarray(costs, dtype=np.float64)
    quality = 1.0 - np.asarray(losses_mean, dtype=np.float64)
    if costs.shape != quality.shape or costs.ndim != 1 or costs.size == 0:
        raise ValueError(f"costs {costs.shape} and losses_mean {quality.shape} must be equal, non-empty (M,)")
    if not (np.all(np.isfinite(costs)) and np.all(np.isfinite(quality))):
        raise ValueError("costs and losses_mean must be finite")
    # By cost, then best quality first, then index: the first of equal-cost models is the one to keep.
    order = np.lexsort((np.arange(costs.size), -quality, costs))
    # Non-decreasing part: a model is worth its cost only if it beats every cheaper model.
    frontier: list[int] = []
    for i in order:
        if not frontier or quality[i] > quality[frontier[-1]]:
            frontier.append(int(i))
    # Upper concave hull (monotone chain): drop a vertex on or below the chord of its neighbours, since
    # mixing those neighbours reaches at least its quality at its cost.
    hull: list[int] = []
    for i in frontier:
        while len(hull) >= 2:
            o, a = hull[-2], hull[-1]
            cross = (costs[a] - costs[o]) * (quality[i] - quality[o]) - (quality[a] - quality[o]) * (
                costs[i] - costs[o]
            )
            if cross >= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return np.array(hull, dtype=np.int64)


def zero_router_mixture(hull: np.ndarray, costs: np.ndarray, budget: float) -> tuple[int, int, float]:
    """(m1, m2, p1): route to hull model m1 with probability p1, else m2, so the expected cost is the budget.

    Paper: c(m1) <= B < c(m2) adjacent on the hull, p1 = (c(m2) - B) / (c(m2) - c(m1)). Below the cheapest
    hull model the router uses it alone; at or beyond the dearest, the dearest alone.
    """
    hull = np.asarray(hull, dtype=np.int64)
    c = np.asarray(costs, dtype=np.float64)[hull]
    if budget <= c[0]:
        return int(hull[0]), int(hull[0]), 1.0
    if budget >= c[-1]:
        return int(hull[-1]), int(hull[-1]), 1.0
    j = int(np.searchsorted(c, budget, side="right"))  # c[j-1] <= B < c[j]
    p1 = (c[j] - budget) / (c[j] - c[j - 1])
    return int(hull[j - 1]), int(hull[j]), float(p1)


def zero_router_curve_points(
    hull: np.ndarray, model_costs_norm_test: np.ndarray, model_scores_test: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Test (normalised cost, score) vertices of the ZeroRouter curve, by increasing validation cost.

    Mixing adjacent hull models m1, m2 with probability p has expected test cost and score
    p * (c1, s1) + (1 - p) * (c2, s2): as the budget sweeps, the curve is the polyline through the hull
    models' own test points, so those points are its vertices.
    """
    hull = np.asarray(hull, dtype=np.int64)
    costs = np.asarray(model_costs_norm_test, dtype=np.float64)
    scores = np.asarray(model_scores_test, dtype=np.float64)
    if costs.shape != scores.shape:
        raise ValueError(f"test costs {costs.shape} and scores {scores.shape} differ in shape")
    return costs[hull].copy(), scores[hull].copy()


# ---- K-NN (paper eq. 3, over the validation prompts) -----------------------------------------------------
def knn_gamma(X_query: np.ndarray, X_ref: np.ndarray, losses_ref: np.ndarray, k: int) -> np.ndarray:
    """(n_query, M) mean loss of each model over the k nearest reference prompts (Euclidean).

    A model with no result on any of the k neighbours falls back to its mean loss over all references.
    """
    X_ref = as_float32_matrix(X_ref, what="X_ref")
    X_query = as_float32_matrix(X_query, X_ref.shape[1], what="X_query")
    losses_ref = np.asarray(losses_ref, dtype=np.float64)
    n_ref = X_ref.shape[0]
    if losses_ref.ndim != 2 or losses_ref.shape[0] != n_ref:
        raise ValueError(f"losses_ref {losses_ref.shape} must be (n_ref={n_ref}, M)")
    if not 1 <= k <= n_ref:
        raise ValueError(f"k must lie in [1, {n_ref}] (the number of reference prompts), got {k}")
    labelled = ~np.isnan(losses_ref)
    if not labelled.any(axis=0).all():
        raise ValueError(f"models (columns) {np.nonzero(~labelled.any(axis=0))[0].tolist()} have no reference label")
    filled = np.where(labelled, losses_ref, 0.0)
    overall = filled.sum(axis=0) / labelled.sum(axis=0)  # (M,)
    neg_half_sq = -0.5 * np.einsum("nd,nd->n", X_ref, X_ref)  # argmin |q - r|^2 == argmax q.r - |r|^2/2
    ref_t = np.ascontiguousarray(X_ref.T)
    out = np.empty((X_query.shape[0], losses_ref.shape[1]), dtype=np.float64)
    for start in range(0, X_query.shape[0], KNN_BLOCK):
        s = X_query[start : start + KNN_BLOCK] @ ref_t + neg_half_sq  # (b, n_ref)
        nn = np.argpartition(-s, k - 1, axis=1)[:, :k] if k < n_ref else np.broadcast_to(np.arange(n_ref), s.shape)
        sums = filled[nn].sum(axis=1)  # (b, M)
        counts = labelled[nn].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + s.shape[0]] = np.where(counts > 0, sums / np.maximum(counts, 1), overall)
    return out


# ---- clairvoyant oracles (paper appendix "Hyper-parameter Choices") --------------------------------------
# Both oracles predict every model's loss through sigmoid outputs, trained by Adam on the binary cross
# entropy over labelled cells only (soft labels: losses may be fractional). They are trained in numpy with
# hand-written gradients rather than torch: at batch 64 these networks are tiny, and torch's per-operation
# overhead made an epoch about 3x slower on one core; they run inside every evaluation trial.
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


class _Adam:
    """Adam (Kingma & Ba) over a list of float32 arrays, updated in place."""

    def __init__(self, params: list[np.ndarray], lr: float) -> None:
        self.params, self.lr, self.t = params, lr, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, grads: list[np.ndarray]) -> None:
        b1, b2 = ADAM_BETAS
        self.t += 1
        step = self.lr / (1 - b1**self.t)
        root_c2 = np.sqrt(1 - b2**self.t)
        for p, m, v, g in zip(self.params, self.m, self.v, grads, strict=True):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * (g * g)
            # p -= lr_t * m_hat / (sqrt(v_hat) + eps), with the bias corrections folded into scalars
            p -= step * m / (np.sqrt(v) / root_c2 + ADAM_EPS)


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
    opt = _Adam(net.params, lr)
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
    return best_state, best_loss


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
