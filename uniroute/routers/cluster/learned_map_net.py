"""The LearnedMap's network trained in numpy: BN, [FC(128)-BN-ReLU] x 2, FC(K), softmax (paper appendix).

Why numpy and not torch: a batch is 64 rows, so a step is microseconds of arithmetic inside torch's per-op
overhead (7.7 s per evaluation trial for four candidate K on MMLU-Pro); the hand-written forward and backward
pass here does the same arithmetic in a fraction of that, and needs no torch import in evaluation workers.

Training as the paper's appendix states (it used Keras): Adam with lr 0.005, batch 64, 5 epochs, the log loss
of gamma = Phi(x) . Psi(m) against the training LLMs' labels, Psi of the training LLMs from the training
prompts; Keras' defaults where the paper names none (Glorot-uniform weights and zero biases, BatchNorm eps 1e-3,
Adam eps 1e-7, probabilities clipped to [1e-7, 1 - 1e-7] in the log loss).

Shapes: X (n, d) float32; losses (n, M) in [0, 1], NaN = no label; psi (M, K).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from uniroute.routers.cluster.adam import Adam

log = logging.getLogger(__name__)

HIDDEN = 128
BN_EPS = 1e-3  # Keras' BatchNormalization default
ADAM_EPS = 1e-7  # Keras' Adam default
GAMMA_EPS = 1e-7  # Keras clips probabilities by this inside binary cross-entropy
STATS_CHUNK = 65536  # rows per chunk when computing BatchNorm population statistics


@dataclass
class BatchNormStats:
    """Population mean and variance of the inputs of the three BatchNorm layers."""

    mean: list[np.ndarray]
    var: list[np.ndarray]


class LearnedMapNet:
    """Parameters and the forward/backward pass; params order: (g0, b0, w1, c1, g1, b1, w2, c2, g2, b2, w3, c3)."""

    def __init__(self, d: int, k: int, rng: np.random.Generator) -> None:
        def dense(fan_in: int, fan_out: int) -> list[np.ndarray]:
            limit = np.sqrt(6.0 / (fan_in + fan_out))  # Glorot uniform, Keras' Dense default
            return [rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32), np.zeros(fan_out, np.float32)]

        def bn(n: int) -> list[np.ndarray]:
            return [np.ones(n, np.float32), np.zeros(n, np.float32)]

        self.params = [*bn(d), *dense(d, HIDDEN), *bn(HIDDEN), *dense(HIDDEN, HIDDEN), *bn(HIDDEN), *dense(HIDDEN, k)]

    def logits(self, x: np.ndarray, stats: BatchNormStats) -> np.ndarray:
        """(n, K) pre-softmax scores in inference mode (BatchNorm with population statistics)."""
        g0, b0, w1, c1, g1, b1, w2, c2, g2, b2, w3, c3 = self.params

        def bn(a: np.ndarray, i: int, g: np.ndarray, b: np.ndarray) -> np.ndarray:
            return (a - stats.mean[i]) / np.sqrt(stats.var[i] + BN_EPS) * g + b

        h = bn(x, 0, g0, b0) @ w1 + c1
        h = np.maximum(bn(h, 1, g1, b1), 0) @ w2 + c2
        return np.maximum(bn(h, 2, g2, b2), 0) @ w3 + c3

    def train_step_grads(self, x: np.ndarray, y: np.ndarray, mask: np.ndarray, psi_t: np.ndarray) -> list[np.ndarray]:
        """Gradients of the batch's mean masked log loss; BatchNorm normalises with the batch's statistics."""
        g0, b0, w1, c1, g1, b1, w2, c2, g2, b2, w3, c3 = self.params
        xh0, s0 = _bn_forward(x)
        z1 = (xh0 * g0 + b0) @ w1 + c1
        xh1, s1 = _bn_forward(z1)
        a1 = np.maximum(xh1 * g1 + b1, 0)
        z2 = a1 @ w2 + c2
        xh2, s2 = _bn_forward(z2)
        a2 = np.maximum(xh2 * g2 + b2, 0)
        z3 = a2 @ w3 + c3
        phi = _softmax(z3)
        gamma = phi @ psi_t  # (b, M)
        inside = (gamma > GAMMA_EPS) & (gamma < 1 - GAMMA_EPS)  # the clip passes no gradient outside
        g = np.clip(gamma, GAMMA_EPS, 1 - GAMMA_EPS)
        dgamma = (g - y) / (g * (1 - g)) * mask * inside / max(float(mask.sum()), 1.0)
        dphi = dgamma @ psi_t.T
        dz3 = phi * (dphi - (dphi * phi).sum(axis=1, keepdims=True))
        da2 = (dz3 @ w3.T) * (a2 > 0)
        dxh2 = da2 * g2
        dz2 = _bn_backward(dxh2, xh2, s2)
        da1 = (dz2 @ w2.T) * (a1 > 0)
        dxh1 = da1 * g1
        dz1 = _bn_backward(dxh1, xh1, s1)
        dx0 = dz1 @ w1.T
        return [
            (dx0 * xh0).sum(0), dx0.sum(0),
            (xh0 * g0 + b0).T @ dz1, dz1.sum(0),
            (da1 * xh1).sum(0), da1.sum(0),
            a1.T @ dz2, dz2.sum(0),
            (da2 * xh2).sum(0), da2.sum(0),
            a2.T @ dz3, dz3.sum(0),
        ]

    def population_stats(self, X: np.ndarray) -> BatchNormStats:
        """Exact mean and variance of each BatchNorm's input over X, earlier layers already in inference mode."""
        g0, b0, w1, c1, g1, b1, w2, c2, _, _, _, _ = self.params
        means: list[np.ndarray] = []
        variances: list[np.ndarray] = []

        def layer_input(chunk: np.ndarray, i: int) -> np.ndarray:
            h = chunk
            if i >= 1:
                h = (h - means[0]) / np.sqrt(variances[0] + BN_EPS) * g0 + b0
                h = h @ w1 + c1
            if i >= 2:
                h = np.maximum((h - means[1]) / np.sqrt(variances[1] + BN_EPS) * g1 + b1, 0) @ w2 + c2
            return h

        for i in range(3):
            count, mean, m2 = 0, None, None
            for start in range(0, X.shape[0], STATS_CHUNK):
                a = layer_input(X[start : start + STATS_CHUNK], i).astype(np.float64)
                c_n, c_mean = a.shape[0], a.mean(axis=0)
                # In place on the chunk's own copy (the same values as ((a - c_mean) ** 2).sum(axis=0)), and gone before
                # the next layer's input is computed: a second (chunk, d) float64 array either way doubled the
                # statistics' peak (100 MB more at a build's 50k tuning prompts, at its driver's peak at 1M x 100).
                a -= c_mean
                np.square(a, out=a)
                c_m2 = a.sum(axis=0)
                del a
                if mean is None:
                    count, mean, m2 = c_n, c_mean, c_m2
                else:  # Chan et al.'s merge of (count, mean, M2) over chunks
                    delta, total = c_mean - mean, count + c_n
                    mean = mean + delta * c_n / total
                    m2 = m2 + c_m2 + delta**2 * count * c_n / total
                    count = total
            # Both set by the first chunk (X has at least one row).
            means.append(mean.astype(np.float32))  # type: ignore[union-attr]
            variances.append((m2 / count).astype(np.float32))  # type: ignore[union-attr, operator]
        return BatchNormStats(mean=means, var=variances)

    def folded(self, stats: BatchNormStats) -> dict[str, np.ndarray]:
        """The inference-mode network as three affine layers (BatchNorms folded in): w1, b1, w2, b2, w3, b3."""
        p = [a.astype(np.float64) for a in self.params]
        g0, b0, w1, c1, g1, b1, w2, c2, g2, b2, w3, c3 = p
        mean = [m.astype(np.float64) for m in stats.mean]
        scale = [g / np.sqrt(v.astype(np.float64) + BN_EPS) for g, v in zip((g0, g1, g2), stats.var, strict=True)]
        shift = [b - m * s for b, m, s in zip((b0, b1, b2), mean, scale, strict=True)]
        # BN0 then FC1: (x * s0 + t0) w1 + c1; then BN1 scales and shifts the columns.
        fw1 = (scale[0][:, None] * w1) * scale[1][None, :]
        fb1 = (shift[0] @ w1 + c1) * scale[1] + shift[1]
        fw2 = w2 * scale[2][None, :]
        fb2 = c2 * scale[2] + shift[2]
        return {"w1": fw1, "b1": fb1, "w2": fw2, "b2": fb2, "w3": w3, "b3": c3}


def _bn_forward(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(normalised a, 1 / std) with the batch's own mean and (biased) variance."""
    mean = a.mean(axis=0)
    inv_std = 1.0 / np.sqrt(a.var(axis=0) + BN_EPS)
    return (a - mean) * inv_std, inv_std


def _bn_backward(dxh: np.ndarray, xh: np.ndarray, inv_std: np.ndarray) -> np.ndarray:
    """Gradient with respect to a BatchNorm's input from the gradient with respect to its normalised output."""
    n = dxh.shape[0]
    return inv_std / n * (n * dxh - dxh.sum(axis=0) - xh * (dxh * xh).sum(axis=0))


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def train_learned_map_net(
    X: np.ndarray, losses: np.ndarray, psi: np.ndarray, *, seed: int, epochs: int, lr: float, batch_size: int,
) -> dict[str, np.ndarray]:
    """Adam on the masked log loss; the inference-mode network's folded layers (w1, b1, w2, b2, w3, b3).

    X (n, d) and losses (n, M) are the training prompts with labels; psi (M, K) the same models' Psi.
    """
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(seed)
    n, k = X.shape[0], psi.shape[1]
    psi_t = np.ascontiguousarray(psi.T, dtype=np.float32)  # (K, M)
    lab = ~np.isnan(losses)
    y = np.where(lab, losses, 0.0).astype(np.float32)
    mask = lab.astype(np.float32)
    net = LearnedMapNet(X.shape[1], k, rng)
    opt = Adam(net.params, lr, eps=ADAM_EPS, wide_denominator=False)
    with threadpool_limits(limits=1):  # the cores are shared: single-threaded BLAS
        for _ in range(epochs):
            order = rng.permutation(n)
            xs, ys, ms = X[order], y[order], mask[order]  # gathered once per epoch; batches are views
            for start in range(0, n, batch_size):
                stop = min(start + batch_size, n)
                if stop - start < 2:
                    continue  # BatchNorm cannot normalise a batch of one in training mode
                opt.step(net.train_step_grads(xs[start:stop], ys[start:stop], ms[start:stop], psi_t))
        # The last epoch's gathered copies (60 MB at 50k prompts) go before the statistics.
        xs = ys = ms = None  # type: ignore[assignment]
        # Deviation from Keras' moving averages: with a small training set 5 epochs are few steps and a moving
        # average (momentum 0.99) would still sit near its initial (0, 1); the exact statistics of the final
        # network over the training set are what inference should use.
        return net.folded(net.population_stats(X))
