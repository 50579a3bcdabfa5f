"""UniRoute LearnedMap: a learned soft cluster map Phi(x; theta) trained against training LLMs' correctness.

Paper section 4.2 and appendix "Implementation Details of UniRoute (LearnedMap)":
Phi = Softmax . FC(K) . H' . H . BN . phi, with H = ReLU . BN . FC(128); gamma(x, m) = Phi(x) . Psi(m),
fitted by the log loss of gamma against training LLMs' labels, Adam, lr 0.005, batch 64, 5 epochs.
Psi of the training LLMs comes from the training prompts (appendix "Hyper-parameter Choices"). The network
is trained in numpy (`learned_map_net`); the fitted map is three affine layers with the BatchNorms folded in.

The map spreads a prompt over the K clusters of a K-means fit; Psi(m) of any model, new ones included, is its
per-cluster validation loss on those clusters (paper section 4.3: Psi does not depend on theta), so the map
keeps those centroids (`clusters`): onboarding assigns a new model's validation prompts with them.

Shapes: X (n, d) float32; losses (n, M) in [0, 1], NaN = no label; psi_values (M, K); Phi(X) (n, K).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from uniroute.routers.cluster.kmeans import Centroids, as_float32_matrix
from uniroute.routers.cluster.learned_map_net import train_learned_map_net

log = logging.getLogger(__name__)

LAYERS = ("w1", "b1", "w2", "b2", "w3", "b3")


@dataclass(frozen=True, eq=False)
class LearnedMap:
    """Fitted Phi(x): two ReLU layers with BatchNorm folded in, then a softmax over K clusters."""

    w1: np.ndarray  # (d, 128) float32, input BN and first hidden BN folded in
    b1: np.ndarray  # (128,)
    w2: np.ndarray  # (128, 128), second hidden BN folded in
    b2: np.ndarray  # (128,)
    w3: np.ndarray  # (128, K)
    b3: np.ndarray  # (K,)
    clusters: Centroids | None = None  # the K-means clusters Psi is measured on (K centres)

    def __post_init__(self) -> None:
        for name in LAYERS:
            a = np.array(getattr(self, name), dtype=np.float32, copy=True)
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        d, h1 = self.w1.shape
        if self.w2.shape[0] != h1 or self.w3.shape[0] != self.w2.shape[1]:
            raise ValueError(f"LearnedMap layer shapes do not chain: {self.w1.shape}, {self.w2.shape}, {self.w3.shape}")
        if (self.b1.shape, self.b2.shape, self.b3.shape) != ((h1,), (self.w2.shape[1],), (self.w3.shape[1],)):
            raise ValueError("LearnedMap bias shapes do not match their layers")
        if self.clusters is not None and (self.clusters.k, self.clusters.dim) != (self.k, self.dim):
            raise ValueError(
                f"LearnedMap clusters have K={self.clusters.k}, d={self.clusters.dim}; "
                f"the map has K={self.k}, d={self.dim}"
            )

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
    """X, losses and Psi validated; prompts without any label dropped (they carry no signal)."""
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
    rows = lab.any(axis=1)
    if rows.sum() < 2:
        raise ValueError(f"need at least 2 labelled training prompts, got {int(rows.sum())}")
    return X[rows], losses[rows], psi_values


def fit_learned_map(
    X: np.ndarray, losses: np.ndarray, psi_values: np.ndarray, seed: int, epochs: int = 5, lr: float = 0.005,
    batch_size: int = 64, clusters: Centroids | None = None, purpose: str = "",
) -> LearnedMap:
    """Fit Phi on training prompts X (n, d) against training LLMs' losses (n, M) with their Psi (M, K).

    The paper trains the dynamic-pool map for a fixed 5 epochs ("training for too long can lead to
    overfitting") with no early stopping, and so does this; clusters are the K-means clusters Psi is measured on.
    `purpose` goes into the log line: a build fits several maps of one K on prompt sets of one size, and their
    lines read as one line logged twice when nothing tells them apart.
    """
    X, losses, psi_values = _check_inputs(X, losses, psi_values)
    layers = train_learned_map_net(X, losses, psi_values, seed=seed, epochs=epochs, lr=lr, batch_size=batch_size)
    log.info("learned map%s: K=%d on %d prompts, %d epochs", f" ({purpose})" if purpose else "", psi_values.shape[1],
             X.shape[0], epochs)
    return LearnedMap(**layers, clusters=clusters)
