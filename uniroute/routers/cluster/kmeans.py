"""Prompt clusters: seeded K-means on training-prompt embeddings and nearest-centroid assignment.

Shapes: X is (n, d) float32 (L2-normalised embeddings), centres are (K, d) float32.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

# Rows per block when assigning: a (block, K) float32 score matrix stays in cache-friendly sizes and a
# 1M-row input never materialises a (1M, K) temporary.
ASSIGN_BLOCK = 4096


def as_float32_matrix(X: np.ndarray, d: int | None = None, what: str = "X") -> np.ndarray:
    """X as a C-contiguous (n, d) float32 array, checking the dimension when d is given."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError(f"{what} must be a 2-d (n, d) array, got shape {X.shape}")
    if d is not None and X.shape[1] != d:
        raise ValueError(f"{what} has dimension {X.shape[1]}, expected {d}")
    return X


@dataclass(frozen=True, eq=False)
class Centroids:
    """K cluster centres; a prompt belongs to the cluster of its nearest centre (Euclidean)."""

    centers: np.ndarray  # (K, d) float32

    def __post_init__(self) -> None:
        # A private read-only copy: the caller's array is neither aliased nor frozen.
        centers = as_float32_matrix(np.array(self.centers, dtype=np.float32, copy=True), what="centers")
        if centers.shape[0] < 1:
            raise ValueError("Centroids needs at least one centre")
        if not np.all(np.isfinite(centers)):
            raise ValueError("Centroids has non-finite centre coordinates")
        centers.setflags(write=False)
        object.__setattr__(self, "centers", centers)
        # -|c|^2 / 2 per centre: argmin |x - c|^2 == argmax (x.c - |c|^2/2), which needs one matmul only.
        half_sq = (-0.5 * np.einsum("kd,kd->k", centers, centers)).astype(np.float32)
        half_sq.setflags(write=False)
        object.__setattr__(self, "_neg_half_sq", half_sq)

    @property
    def k(self) -> int:
        """Number of clusters K."""
        return int(self.centers.shape[0])

    @property
    def dim(self) -> int:
        """Embedding dimension d."""
        return int(self.centers.shape[1])

    def assign(self, X: np.ndarray) -> np.ndarray:
        """(n,) int64 index of the nearest centre of each row of X (n, d), computed in float32 blocks."""
        X = as_float32_matrix(X, self.dim)
        out = np.empty(X.shape[0], dtype=np.int64)
        centers_t = np.ascontiguousarray(self.centers.T)  # (d, K)
        scores = np.empty((min(ASSIGN_BLOCK, X.shape[0]), self.k), dtype=np.float32)
        for start in range(0, X.shape[0], ASSIGN_BLOCK):
            block = X[start : start + ASSIGN_BLOCK]
            s = scores[: block.shape[0]]
            np.matmul(block, centers_t, out=s)
            s += self._neg_half_sq  # type: ignore[attr-defined]  # set in __post_init__, not a field
            out[start : start + block.shape[0]] = s.argmax(axis=1)
        return out

    def membership(self, X: np.ndarray) -> np.ndarray:
        """(n, K) float32 one-hot cluster membership of each row of X."""
        idx = self.assign(X)
        out = np.zeros((idx.shape[0], self.k), dtype=np.float32)
        out[np.arange(idx.shape[0]), idx] = 1.0
        return out


def clustering_id_of(centroids: Centroids) -> str:
    """Content id of a set of centroids: the same centres give the same id."""
    digest = hashlib.sha256(np.ascontiguousarray(centroids.centers, dtype=np.float32).tobytes()).hexdigest()
    return "kmeans-" + digest[:16]


def _check_k(n: int, k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if k > n:
        raise ValueError(f"cannot fit k={k} clusters on {n} prompts")


def fit_centroids(X: np.ndarray, k: int, seed: int, n_init: int = 1, max_iter: int = 300) -> Centroids:
    """Seeded K-means (scikit-learn, k-means++ initialisation) on training embeddings X (n, d)."""
    from sklearn.cluster import KMeans

    X = as_float32_matrix(X)
    _check_k(X.shape[0], k)
    km = KMeans(n_clusters=k, n_init=n_init, max_iter=max_iter, random_state=seed)
    km.fit(X)
    log.info("k-means: k=%d on %d x %d, inertia %.4g, %d iterations", k, *X.shape, km.inertia_, km.n_iter_)
    return Centroids(centers=km.cluster_centers_.astype(np.float32))
