"""K-means over a Dask array whose blocks stay where they are: Lloyd steps whose per-block sums run on the workers.

Each iteration ships the (K, d) centres to every block's task and brings back, per block, the (K, d) sums of its
rows by nearest centre and the K counts, added up in a tree on the workers: the driver holds K x d numbers, never
the rows. Initialisation is k-means++ on a seeded sample of rows (all rows when they are few), so on data that fits
it starts where scikit-learn's KMeans(n_init=1, random_state=seed) starts and converges to the same centres within
tolerance (tests/routers/cluster/test_kmeans_dask.py), and Psi follows. The stopping rule is scikit-learn's: the centres
moved less (squared, summed) than tol times the mean per-feature variance of the rows.

Shapes: X is a dask array (n, d) float32 chunked by rows; centres are (K, d).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import dask
import numpy as np
import scipy.sparse as sp
from sklearn.cluster import kmeans_plusplus

from uniroute.routers.cluster.kmeans import Centroids, _check_k

if TYPE_CHECKING:
    import dask.array

log = logging.getLogger(__name__)

INIT_SAMPLE = 20_000  # rows k-means++ draws from (a sample of this many when there are more)
TREE_WIDTH = 8  # partial sums added in groups of this many on the workers
TOL = 1e-4  # scikit-learn's default


def _nearest(block: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(b,) nearest centre of each row of block (b, d) and (b,) its squared distance."""
    block = np.asarray(block, dtype=np.float32)
    scores = block @ centers.T.astype(np.float32) - 0.5 * np.einsum("kd,kd->k", centers, centers).astype(np.float32)
    idx = scores.argmax(axis=1)
    best = scores[np.arange(block.shape[0]), idx].astype(np.float64)
    sq = np.einsum("bd,bd->b", block, block).astype(np.float64) - 2.0 * best
    return idx, np.maximum(sq, 0.0)


def _partial(block: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """One block's Lloyd step: ((K, d) float64 sums of rows by nearest centre, (K,) counts, inertia)."""
    block = np.asarray(block, dtype=np.float32)
    idx, sq = _nearest(block, centers)
    k, n = centers.shape[0], block.shape[0]
    onehot = sp.csr_matrix((np.ones(n), (idx, np.arange(n))), shape=(k, n))
    return np.asarray(onehot @ block.astype(np.float64)), np.bincount(idx, minlength=k).astype(np.int64), sq.sum()


def _moments(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """One block's (d,) sum, (d,) sum of squares and row count: the rows' per-feature variance, for the tolerance."""
    block = np.asarray(block, dtype=np.float64)
    return block.sum(axis=0), (block * block).sum(axis=0), block.shape[0]


def _add(*parts: tuple) -> tuple:
    """Element-wise sum of tuples of arrays or numbers (one node of the reduction tree)."""
    return tuple(sum(values[1:], start=values[0]) for values in zip(*parts, strict=True))


def _tree_sum(parts: list) -> object:
    """A delayed sum of delayed tuples, TREE_WIDTH at a time, so the workers add and one tuple reaches the driver."""
    add = dask.delayed(_add, pure=True)
    while len(parts) > 1:
        parts = [add(*parts[i : i + TREE_WIDTH]) for i in range(0, len(parts), TREE_WIDTH)]
    return parts[0]


def _blocks(X: dask.array.Array) -> list:
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-d (n, d) dask array, got shape {X.shape}")
    return list(X.rechunk({1: -1}).to_delayed().ravel())  # whole rows per block


def _init(X: dask.array.Array, k: int, seed: int, sample: int) -> np.ndarray:
    """k-means++ centres (k, d) from a seeded sample of rows (every row, in order, when n <= sample)."""
    n = int(X.shape[0])
    if n <= sample:
        rows = X.compute()
    else:
        picked = np.sort(np.random.default_rng(seed).choice(n, size=sample, replace=False))
        rows = X[picked].compute()
    centers, _ = kmeans_plusplus(np.asarray(rows, dtype=np.float32), k, random_state=seed)
    return centers.astype(np.float64)


def fit_centroids_dask(X: dask.array.Array, k: int, seed: int, max_iter: int = 300, tol: float = TOL,
                       init_sample: int = INIT_SAMPLE) -> Centroids:
    """K-means (Lloyd) over the Dask array X (n, d): every step's sums computed where the blocks live."""
    blocks = _blocks(X)
    n = int(X.shape[0])
    _check_k(n, k)
    total, squares, rows = dask.compute(_tree_sum([dask.delayed(_moments)(b) for b in blocks]))[0]
    variance = squares / rows - (total / rows) ** 2
    threshold = tol * float(np.mean(variance))
    centers = _init(X, k, seed, init_sample)
    inertia, step = float("nan"), 0
    for step in range(1, max_iter + 1):
        shared = dask.delayed(centers, name=f"kmeans-centers-{seed}-{step}")  # one copy per step, not per block
        sums, counts, inertia = dask.compute(_tree_sum([dask.delayed(_partial)(b, shared) for b in blocks]))[0]
        new = centers.copy()
        filled = counts > 0  # an empty cluster keeps its centre
        new[filled] = sums[filled] / counts[filled, None]
        shift = float(((new - centers) ** 2).sum())
        centers = new
        if shift <= threshold:
            break
    log.info("k-means on dask: k=%d on %d x %d in %d blocks, inertia %.4g, %d iterations",
             k, n, X.shape[1], len(blocks), inertia, step)
    return Centroids(centers=centers.astype(np.float32))


def assign_blocks(X: dask.array.Array, centroids: Centroids) -> list:
    """Delayed (b,) int64 nearest-centre index per block of X: for callers that write each block where it is."""
    centers = dask.delayed(centroids.centers.astype(np.float64), name="assign-centers")
    return [dask.delayed(_labels)(b, centers) for b in _blocks(X)]


def _labels(block: np.ndarray, centers: np.ndarray) -> np.ndarray:
    return _nearest(block, centers)[0].astype(np.int64)
