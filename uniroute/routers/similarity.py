"""How alike the pool's LLMs are, from their Psi rows (paper: the visualisation of LLM embeddings).

Shapes: M models, K clusters; Psi values (M, K) per-cluster losses, counts (M, K) prompts (or battles) behind
them. `cosine` (M, M) is the cosine similarity of the Psi rows; the order puts alike models next to each other
(average-linkage hierarchical clustering on 1 - cosine, leaves in optimal order). Two models are near
duplicates, a pool smell worth telling the user about, when their rows differ on average by no more than two
draws of one model would by sampling alone: mean_k |Psi_a,k - Psi_b,k| <= mean_k sqrt(2/pi) * sd_k with
sd_k = sqrt(q (1 - q) (1/n_a,k + 1/n_b,k)), q their mean accuracy there. The router can then tell them apart
by cost only. The SQL view `model_similarity` (sql/schema/006_pairwise.sql) computes the same numbers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from uniroute.routers.psi import Psi

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class Similarity:
    """Pairwise similarity of the pool's models, in hierarchical-clustering order."""

    models: tuple[str, ...]  # (M,) in display order
    cosine: np.ndarray  # (M, M) cosine similarity of Psi rows, rows and columns in display order
    mean_abs_difference: np.ndarray  # (M, M) mean per-cluster |difference| of Psi rows
    sampling_difference: np.ndarray  # (M, M) what sampling alone would give for two draws of one model

    def near_duplicates(self) -> list[dict[str, float | str]]:
        """Pairs (each once) whose Psi rows differ by no more than sampling would: most alike first."""
        m = len(self.models)
        rows = [
            {"model_a": self.models[i], "model_b": self.models[j], "cosine": float(self.cosine[i, j]),
             "mean_abs_difference": float(self.mean_abs_difference[i, j]),
             "sampling_difference": float(self.sampling_difference[i, j])}
            for i in range(m) for j in range(i + 1, m)
            if self.mean_abs_difference[i, j] <= self.sampling_difference[i, j]
        ]
        return sorted(rows, key=lambda r: r["mean_abs_difference"] / max(r["sampling_difference"], 1e-12))


def model_similarity(psi: Psi) -> Similarity:
    """Cosine similarity, differences and the display order of a Psi's models (at least two)."""
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    values = psi.values
    m = len(psi.models)
    if m < 2:
        raise ValueError(f"a similarity map needs at least 2 models, got {list(psi.models)}")
    norms = np.linalg.norm(values, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cosine = (values @ values.T) / np.outer(norms, norms)
    cosine = np.nan_to_num(np.clip(cosine, -1.0, 1.0), nan=0.0)
    difference = np.abs(values[:, None, :] - values[None, :, :]).mean(axis=2)
    q = 1.0 - (values[:, None, :] + values[None, :, :]) / 2.0  # (M, M, K) mean accuracy of each pair
    inverse = 1.0 / np.maximum(psi.counts, 1)
    spread = np.sqrt(q * (1.0 - q) * (inverse[:, None, :] + inverse[None, :, :]))
    sampling = np.sqrt(2.0 / np.pi) * spread.mean(axis=2)
    distance = np.clip(1.0 - cosine, 0.0, None)
    np.fill_diagonal(distance, 0.0)
    order = leaves_list(linkage(squareform(distance, checks=False), method="average", optimal_ordering=True))
    pick = np.ix_(order, order)
    return Similarity(tuple(psi.models[i] for i in order), cosine[pick], difference[pick], sampling[pick])
