"""The methods an evaluation compares, and how reports name them."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

KIND_METHODS = ("knn", "kmeans", "kmeans_shrunk", "learnedmap")  # the candidate router kinds
METHODS = ("zero", *KIND_METHODS, "auto", "mlp", "matfac")
ORACLES = ("mlp", "matfac")  # clairvoyant: trained with the test LLMs' labels; upper bounds, not admissible
VAL_SIZE_METHODS = ("auto", *KIND_METHODS)
METHOD_LABELS = {
    "zero": "ZeroRouter",
    "knn": "K-NN",
    "kmeans": "UniRoute (K-means)",
    "kmeans_shrunk": "UniRoute (K-means, count-aware Psi)",
    "learnedmap": "UniRoute (LearnedMap)",
    "auto": "auto (best kind on validation)",
    "mlp": "MLP (clairvoyant oracle)",
    "matfac": "MatFac (clairvoyant oracle)",
}
