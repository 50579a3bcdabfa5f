"""The methods an evaluation compares, and how reports name them."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

METHODS = ("zero", "knn", "kmeans", "learnedmap", "mlp", "matfac", "pairwise")
# What an evaluation runs unless told otherwise: the paper's table (`pairwise` is the arena-style experiment).
DEFAULT_METHODS = METHODS[:6]
ORACLES = ("mlp", "matfac")  # clairvoyant: trained with the test LLMs' labels; upper bounds, not admissible
VAL_SIZE_METHODS = ("knn", "kmeans", "learnedmap")
METHOD_LABELS = {
    "zero": "ZeroRouter",
    "knn": "K-NN",
    "kmeans": "UniRoute (K-means)",
    "learnedmap": "UniRoute (LearnedMap)",
    "mlp": "MLP (clairvoyant oracle)",
    "matfac": "MatFac (clairvoyant oracle)",
    "pairwise": "UniRoute (K-means) from sparse battles",
}
