"""How alike the pool's LLMs are, from their Psi rows (paper: the visualisation of LLM embeddings).

Shapes: M models, K clusters; Psi values (M, K) per-cluster losses, counts (M, K) prompts (or battles) behind
them. `cosine` (M, M) is the cosine similarity of the *centred* Psi rows: each cluster's pool mean loss is taken
out first, because raw error rows are dominated by which clusters are hard for everyone (an 8B and a 51B model
of one family had raw cosine .99 at accuracies .563 and .611); what is left is what distinguishes each model.
The order puts alike models next to each other (average-linkage hierarchical clustering on 1 - cosine, leaves
in optimal order).

Two models are near duplicates, a pool smell worth telling the user about, when a test on their paired
per-cluster differences d_k = Psi_a,k - Psi_b,k finds nothing sampling alone would not give, with
sd_k = sqrt(q (1 - q) (1/n_a,k + 1/n_b,k)) and q their mean accuracy there (clipped to [0.01, 0.99]):
  - no overall difference: |z| <= 1.96 with z = sum_k w_k d_k / sqrt(sum_k w_k), w_k = 1 / sd_k^2 (a model
    better by a little on every cluster is told apart once the clusters add up), and
  - no pattern: sum_k (d_k / sd_k)^2 at most the 95th percentile of chi-square with K degrees of freedom
    (Wilson-Hilferty: K (1 - 2/(9K) + 1.645 sqrt(2/(9K)))^3).
The router can then tell them apart by cost only. The SQL view `model_similarity` computes the same numbers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from uniroute.routers.cluster.psi import Psi

log = logging.getLogger(__name__)


Z_95 = 1.96  # two-sided 5% for the overall difference
Q_CLIP = 0.01  # a cell at accuracy 0 or 1 still has sampling noise: q is kept inside [Q_CLIP, 1 - Q_CLIP]


def chi2_95(dof: int) -> float:
    """The 95th percentile of chi-square with dof degrees of freedom (Wilson-Hilferty; the SQL view uses it too)."""
    h = 2.0 / (9.0 * dof)
    return float(dof * (1.0 - h + 1.645 * np.sqrt(h)) ** 3)


@dataclass(frozen=True, eq=False)
class Similarity:
    """Pairwise similarity of the pool's models, in hierarchical-clustering order."""

    models: tuple[str, ...]  # (M,) in display order
    cosine: np.ndarray  # (M, M) cosine similarity of centred Psi rows, rows and columns in display order
    mean_abs_difference: np.ndarray  # (M, M) mean per-cluster |difference| of Psi rows
    sampling_difference: np.ndarray  # (M, M) what sampling alone would give for two draws of one model
    z: np.ndarray  # (M, M) overall paired difference a - b in standard errors (inverse-variance weighted)
    chi2: np.ndarray  # (M, M) sum over clusters of (d_k / sd_k)^2
    chi2_limit: float  # its 95th percentile under "same model"

    def near_duplicates(self) -> list[dict[str, float | str]]:
        """Pairs (each once) whose Psi rows differ by no more than sampling would: most alike first."""
        m = len(self.models)
        rows: list[dict[str, float | str]] = [
            {"model_a": self.models[i], "model_b": self.models[j], "cosine": float(self.cosine[i, j]),
             "mean_abs_difference": float(self.mean_abs_difference[i, j]),
             "sampling_difference": float(self.sampling_difference[i, j]),
             "z": float(self.z[i, j]), "chi2": float(self.chi2[i, j])}
            for i in range(m) for j in range(i + 1, m)
            if abs(self.z[i, j]) <= Z_95 and self.chi2[i, j] <= self.chi2_limit
        ]
        return sorted(rows, key=lambda r: float(r["chi2"]) + float(r["z"]) ** 2)


def model_similarity(psi: Psi) -> Similarity:
    """Centred cosine similarity, the paired tests and the display order of a Psi's models (at least two)."""
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    values = psi.values
    m, k = values.shape
    if m < 2:
        raise ValueError(f"a similarity map needs at least 2 models, got {list(psi.models)}")
    centred = values - values.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(centred, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cosine = (centred @ centred.T) / np.outer(norms, norms)
    cosine = np.nan_to_num(np.clip(cosine, -1.0, 1.0), nan=0.0)
    np.fill_diagonal(cosine, 1.0)
    diff = values[:, None, :] - values[None, :, :]  # (M, M, K)
    difference = np.abs(diff).mean(axis=2)
    q = np.clip(1.0 - (values[:, None, :] + values[None, :, :]) / 2.0, Q_CLIP, 1.0 - Q_CLIP)
    inverse = 1.0 / np.maximum(psi.counts, 1)
    spread = np.sqrt(q * (1.0 - q) * (inverse[:, None, :] + inverse[None, :, :]))  # sd_k (M, M, K)
    sampling = np.sqrt(2.0 / np.pi) * spread.mean(axis=2)
    weights = 1.0 / spread**2
    z = (weights * diff).sum(axis=2) / np.sqrt(weights.sum(axis=2))
    chi2 = ((diff / spread) ** 2).sum(axis=2)
    distance = np.clip(1.0 - cosine, 0.0, None)
    np.fill_diagonal(distance, 0.0)
    order = leaves_list(linkage(squareform(distance, checks=False), method="average", optimal_ordering=True))
    pick = np.ix_(order, order)
    return Similarity(tuple(psi.models[i] for i in order), cosine[pick], difference[pick], sampling[pick],
                      z[pick], chi2[pick], chi2_95(k))
