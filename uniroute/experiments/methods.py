"""The methods an evaluation compares, and how reports name them."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

KIND_METHODS = ("knn", "kmeans", "kmeans_shrunk", "learnedmap")  # the candidate router kinds
METHODS = ("zero", *KIND_METHODS, "auto", "mlp", "matfac", "pairwise")
# What an evaluation runs unless told otherwise: the paper's table plus the kinds and auto (`pairwise` is the
# arena-style experiment: it needs battles drawn from the labels and answers another question).
DEFAULT_METHODS = tuple(m for m in METHODS if m != "pairwise")
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
    "pairwise": "UniRoute (K-means) from sparse battles",
}
