"""UniRoute LearnedMap: a learned soft cluster map Phi(x; theta) trained against training LLMs' correctness.

Paper section 4.2 and appendix "Implementation Details of UniRoute (LearnedMap)":
Phi = Softmax . FC(K) . H' . H . BN . phi, with H = ReLU . BN . FC(128); gamma(x, m) = Phi(x) . Psi(m),
fitted by the log loss of gamma against training LLMs' labels, Adam, lr 0.005, batch 64, 5 epochs.
Psi of the training LLMs comes from the training prompts (appendix "Hyper-parameter Choices").

Shapes: X (n, d) float32; losses (n, M) in [0, 1], NaN = no label; psi_values (M, K); Phi(X) (n, K).
Torch is used for training only and imported lazily; the fitted map is plain numpy (BatchNorm folded
into the adjacent linear layers in eval mode), so routing is a numpy function and the map pickles
without torch objects.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from uniroute.routers.kmeans import as_float32_matrix

log = logging.getLogger(__name__)

HIDDEN = 128
GAMMA_EPS = 1e-6  # gamma is clipped into (eps, 1 - eps) inside the log loss: Psi cells can be exactly 0 or 1
BN_EPS = 1e-3  # Keras' BatchNormalization default (the paper used Keras); torch's default is 1e-5
STATS_CHUNK = 65536  # rows per chunk when computing BatchNorm population statistics


@contextmanager
def single_thread_torch() -> Iterator[None]:
    """Run torch single-threaded inside the block (the cores are shared), restoring the setting after."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@dataclass(frozen=True, eq=False)
class LearnedMap:
    """Fitted Phi(x): two ReLU layers with BatchNorm folded in, then a softmax over K clusters."""

    w1: np.ndarray  # (d, 128) float32, input BN and first hidden BN folded in
    b1: np.ndarray  # (128,)
    w2: np.ndarray  # (128, 128), second hidden BN folded in
    b2: np.ndarray  # (128,)
    w3: np.ndarray  # (128, K)
    b3: np.ndarray  # (K,)

    def __post_init__(self) -> None:
        for name in ("w1", "b1", "w2", "b2", "w3", "b3"):
            a = np.array(getattr(self, name), dtype=np.float32, copy=True)
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        d, h1 = self.w1.shape
        if self.w2.shape[0] != h1 or self.w3.shape[0] != self.w2.shape[1]:
            raise ValueError(f"LearnedMap layer shapes do not chain: {self.w1.shape}, {self.w2.shape}, {self.w3.shape}")
        if (self.b1.shape, self.b2.shape, self.b3.shape) != ((h1,), (self.w2.shape[1],), (self.w3.shape[1],)):
            raise ValueError("LearnedMap bias shapes do not match their layers")

    @property
    def k(self) -> int:
        """Number of clusters K."""
        return int(self.w3.shape[1])

    @property
    def dim(self) -> int:
        """Embedding dimension d."""
        return int(self.w1.shape[0])

    def logits(self, X: np.ndarray) -> np.ndarray:
        """(n, K) float32 pre-softmax scores."""
        X = as_float32_matrix(X, self.dim)
        h = np.maximum(X @ self.w1 + self.b1, 0)
        h = np.maximum(h @ self.w2 + self.b2, 0)
        return h @ self.w3 + self.b3

    def membership(self, X: np.ndarray) -> np.ndarray:
        """(n, K) softmax probabilities over clusters."""
        z = self.logits(X)
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        return z


def _check_inputs(X: np.ndarray, losses: np.ndarray, psi_values: np.ndarray) -> tuple[np.ndarray, ...]:
    X = as_float32_matrix(X)
    losses = np.asarray(losses, dtype=np.float64)
    psi_values = np.asarray(psi_values, dtype=np.float64)
    if losses.ndim != 2 or losses.shape[0] != X.shape[0]:
        raise ValueError(f"losses {losses.shape} must be (n={X.shape[0]}, M)")
    if psi_values.ndim != 2 or psi_values.shape[0] != losses.shape[1]:
        raise ValueError(f"psi_values {psi_values.shape} must be (M={losses.shape[1]}, K)")
    if not np.all(np.isfinite(psi_values)) or psi_values.min() < 0 or psi_values.max() > 1:
        raise ValueError("psi_values must be finite mean losses in [0, 1]")
    lab = ~np.isnan(losses)
    if np.any((losses[lab] < 0) | (losses[lab] > 1)):
        raise ValueError("losses must lie in [0, 1]")
    rows = lab.any(axis=1)  # prompts with no training-LLM label carry no signal
    if rows.sum() < 2:
        raise ValueError(f"need at least 2 labelled training prompts, got {int(rows.sum())}")
    return X[rows], losses[rows], psi_values


def build_network(d: int, k: int):
    """The appendix architecture as a torch Sequential: BN, [FC(128)-BN-ReLU] x 2, FC(K) (softmax applied after)."""
    import torch
    from torch import nn

    def bn(n: int) -> nn.BatchNorm1d:
        return nn.BatchNorm1d(n, eps=BN_EPS)

    return torch.nn.Sequential(
        bn(d),
        nn.Linear(d, HIDDEN), bn(HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN), bn(HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, k),
    )


def train_network(X: np.ndarray, losses: np.ndarray, psi_values: np.ndarray, seed: int, epochs: int, lr: float,
                  batch_size: int):
    """The trained torch network (eval mode, BatchNorm statistics over the whole training set)."""
    import torch

    X, losses, psi_values = _check_inputs(X, losses, psi_values)
    n, k = X.shape[0], psi_values.shape[1]
    rng = np.random.default_rng(seed)
    debug = log.isEnabledFor(logging.DEBUG)
    with single_thread_torch():
        torch.manual_seed(seed)
        net = build_network(X.shape[1], k)
        lab = ~np.isnan(losses)
        xt = torch.from_numpy(X)
        yt = torch.from_numpy(np.where(lab, losses, 0.0).astype(np.float32))
        mt = torch.from_numpy(lab.astype(np.float32))
        psi_t = torch.from_numpy(psi_values.T.astype(np.float32).copy())  # (K, M)
        opt = torch.optim.Adam(net.parameters(), lr=lr, fused=True)  # one kernel per step, not one per tensor
        # The step is a few microseconds of arithmetic wrapped in per-op overhead, so the loop keeps ops
        # out of it: each epoch gathers X, labels and mask in shuffled order once and steps over views.
        for epoch in range(epochs):
            net.train()
            order = torch.from_numpy(rng.permutation(n))
            xs, ys, ms = xt[order], yt[order], mt[order]
            cells = ms.sum(dim=1)
            total = 0.0
            for start in range(0, n, batch_size):
                stop = min(start + batch_size, n)
                if stop - start < 2:
                    continue  # BatchNorm cannot normalise a batch of one in training mode
                phi = torch.softmax(net(xs[start:stop]), dim=1)  # (b, K)
                gamma = (phi @ psi_t).clamp(GAMMA_EPS, 1 - GAMMA_EPS)  # (b, M)
                y, m = ys[start:stop], ms[start:stop]
                # Log loss of gamma against the (possibly fractional) losses as soft labels, labelled cells only.
                ll = -(y * torch.log(gamma) + (1 - y) * torch.log1p(-gamma)) * m
                loss = ll.sum() / cells[start:stop].sum().clamp(min=1)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if debug:
                    total += float(ll.detach().sum())
            if debug:
                log.debug("learned map epoch %d: train log loss %.4f", epoch + 1, total / max(float(cells.sum()), 1.0))
        _set_population_batchnorm_stats(net, xt)
        net.eval()
    return net


def _set_population_batchnorm_stats(net, xt) -> None:
    """Replace every BatchNorm's running statistics by the exact mean and variance over the training set.

    Deviation from Keras/torch moving averages: with a small training set, 5 epochs are few steps, and a
    moving average (Keras momentum 0.99) would still sit near its initial (0, 1); the exact statistics of
    the final network are what eval mode should use.
    """
    import torch

    net.eval()  # earlier BatchNorms already normalise with their exact statistics when a later one is measured
    with torch.no_grad():
        for i, module in enumerate(net):
            if not isinstance(module, torch.nn.BatchNorm1d):
                continue
            prefix = net[:i]
            count, mean, m2 = 0, None, None
            for start in range(0, xt.shape[0], STATS_CHUNK):
                a = prefix(xt[start : start + STATS_CHUNK]).double()
                c_n, c_mean = a.shape[0], a.mean(dim=0)
                c_m2 = ((a - c_mean) ** 2).sum(dim=0)
                if mean is None:
                    count, mean, m2 = c_n, c_mean, c_m2
                else:  # Chan et al.'s merge of (count, mean, M2) over chunks
                    delta, total = c_mean - mean, count + c_n
                    mean = mean + delta * c_n / total
                    m2 = m2 + c_m2 + delta**2 * count * c_n / total
                    count = total
            module.running_mean.copy_(mean.float())
            module.running_var.copy_((m2 / count).float())


def export_network(net) -> LearnedMap:
    """Fold the eval-mode BatchNorms into the linear layers and return the numpy LearnedMap."""
    import torch

    def affine(bn: torch.nn.BatchNorm1d) -> tuple[np.ndarray, np.ndarray]:
        """(scale, shift) of an eval-mode BatchNorm: y = x * scale + shift."""
        scale = bn.weight.detach().double() / torch.sqrt(bn.running_var.double() + bn.eps)
        shift = bn.bias.detach().double() - bn.running_mean.double() * scale
        return scale.numpy(), shift.numpy()

    bn0, fc1, bn1, _, fc2, bn2, _, fc3 = net
    s0, t0 = affine(bn0)
    w1 = fc1.weight.detach().double().numpy()  # (128, d)
    # fc1(x * s0 + t0) = (w1 * s0) x + (w1 @ t0 + b1); then bn1 scales rows and shifts.
    b1 = w1 @ t0 + fc1.bias.detach().double().numpy()
    w1 = w1 * s0[None, :]
    s1, t1 = affine(bn1)
    w1, b1 = w1 * s1[:, None], b1 * s1 + t1
    s2, t2 = affine(bn2)
    w2 = fc2.weight.detach().double().numpy() * s2[:, None]
    b2 = fc2.bias.detach().double().numpy() * s2 + t2
    return LearnedMap(
        w1=w1.T, b1=b1, w2=w2.T, b2=b2,
        w3=fc3.weight.detach().double().numpy().T, b3=fc3.bias.detach().double().numpy(),
    )


def fit_learned_map(X: np.ndarray, losses: np.ndarray, psi_values: np.ndarray, seed: int, epochs: int = 5,
                    lr: float = 0.005, batch_size: int = 64) -> LearnedMap:
    """Fit Phi on training prompts X (n, d) against training LLMs' losses (n, M) with their Psi (M, K)."""
    net = train_network(X, losses, psi_values, seed=seed, epochs=epochs, lr=lr, batch_size=batch_size)
    return export_network(net)
