"""Leave-one-out gamma on the validation prompts: each prompt's estimated losses with its own labels left out.

Every router kind estimates a model's loss on a prompt from that model's validation labels (per-cluster means
for K-means and the LearnedMap, the nearest validation prompts for K-NN). Scoring a kind on the very labels it
averaged would reward memorising them; leaving the scored prompt out is the limit of cross-fitting (one fold
per prompt), is exact and deterministic (no fold noise between candidates), and leaves n - 1 labelled prompts
per model, nearly what the deployed router has. For Psi it costs no refit: a cell's sum and count minus one
prompt.

Shapes: n validation prompts, M models, K clusters; losses (n, M) float64 with NaN = no label; member (n, K)
cluster membership (one-hot or soft) and cluster_of (n,) the hard cluster whose Psi cell each label feeds.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from uniroute.routers.knn import knn_gammas, top_k_order

log = logging.getLogger(__name__)


def _cell_parts(sums: np.ndarray, counts: np.ndarray, strength: float) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) with cell = A + B * overall: the shrunk Psi cell (sum + s * overall) / (count + s) as a line in overall.

    A count-0 cell with no prior (s = 0) is the model's overall mean (A = 0, B = 1), as in psi.py.
    """
    denom = counts + strength
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(denom > 0, sums / np.where(denom > 0, denom, 1.0), 0.0)
        b = np.where(denom > 0, strength / np.where(denom > 0, denom, 1.0), 1.0)
    return a, b


def loo_psi_gamma(member: np.ndarray, cluster_of: np.ndarray, losses: np.ndarray, k: int,
                  strength: float = 0.0) -> np.ndarray:
    """(n, M) gamma of each validation prompt under Psi computed from every other validation prompt.

    Psi cells are shrunk toward the model's overall mean loss with `strength` pseudo-prompts (0: plain means;
    see psi.shrunk_psi). member (n, K) is the Phi of the same prompts (one-hot for K-means, soft for the
    LearnedMap); cluster_of (n,) the cluster whose Psi cell each prompt's labels feed.
    """
    losses = np.asarray(losses, dtype=np.float64)
    member = np.asarray(member, dtype=np.float64)
    cluster_of = np.asarray(cluster_of, dtype=np.int64)
    n, m = losses.shape
    if member.shape != (n, k) or cluster_of.shape != (n,):
        raise ValueError(f"member {member.shape} and cluster_of {cluster_of.shape} must be ({n}, {k}) and ({n},)")
    lab = ~np.isnan(losses)
    filled = np.where(lab, losses, 0.0)
    onehot = np.zeros((n, k))
    onehot[np.arange(n), cluster_of] = 1.0
    sums, counts = onehot.T @ filled, onehot.T @ lab  # (K, M)
    total, total_n = filled.sum(axis=0), lab.sum(axis=0)  # (M,)
    # Leaving prompt i out changes its own cluster's cell and every model's overall mean.
    loo_total, loo_n = total[None, :] - filled, total_n[None, :] - lab  # (n, M)
    with np.errstate(invalid="ignore", divide="ignore"):
        overall = np.where(loo_n > 0, loo_total / np.maximum(loo_n, 1), np.nan)
    # A model whose only label is the left-out prompt has no estimate without it: use the mean of the others
    # (no model at all is known there, which only happens on degenerate inputs).
    if np.isnan(overall).any():
        overall = np.where(np.isnan(overall), np.nanmean(overall, axis=1, keepdims=True), overall)
        overall = np.nan_to_num(overall, nan=0.5)
    a, b = _cell_parts(sums, counts, strength)  # (K, M) with every prompt in
    gamma = member @ a + overall * (member @ b)
    # Swap prompt i's own cell for its leave-one-out version.
    own = member[np.arange(n), cluster_of][:, None]  # (n, 1)
    a_own, b_own = _cell_parts(sums[cluster_of] - filled, counts[cluster_of] - lab, strength)
    gamma += own * ((a_own + b_own * overall) - (a[cluster_of] + b[cluster_of] * overall))
    return gamma


def loo_neighbour_order(X: np.ndarray, k_max: int, block: int = 1024) -> np.ndarray:
    """(n, k_max) nearest other prompts of each prompt of X (n, d), most similar first; a prompt is not its own."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    n = X.shape[0]
    k_max = min(k_max, n - 1)
    if k_max < 1:
        raise ValueError(f"leave-one-out neighbours need at least 2 prompts, got {n}")
    out = np.empty((n, k_max), dtype=np.int64)
    for s in range(0, n, block):
        sims = X[s : s + block] @ X.T
        rows = np.arange(sims.shape[0])
        sims[rows, s + rows] = -np.inf
        out[s : s + block] = top_k_order(sims, k_max)
    return out


def loo_knn_gammas(order: np.ndarray, losses: np.ndarray, ks: Sequence[int]) -> dict[int, np.ndarray]:
    """{k: (n, M) K-NN gamma of each prompt from its k nearest other prompts}; order from loo_neighbour_order."""
    ks = [min(int(k), order.shape[1]) for k in ks]
    return knn_gammas(order, losses, sorted(set(ks)))
