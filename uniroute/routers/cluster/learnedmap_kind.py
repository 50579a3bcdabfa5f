"""The `learnedmap` kind: UniRoute's LearnedMap (a soft Phi trained on the training prompts' labels) on the
K-means clusters K-means chose, which it keeps so a new model's Psi row is measured as for K-means.

Shapes: n_val validation prompts, P pool models, K clusters, d embedding dimension.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.kmeans_kind import KMEANS, ClusterKind
from uniroute.routers.cluster.learned_map import LAYERS, LearnedMap
from uniroute.routers.cluster.psi import psi_from_losses
from uniroute.routers.kinds import HeldOutState, OnboardingSample, Tuned, TuningEngine
from uniroute.routers.router import Router

log = logging.getLogger(__name__)

REFERENCE_SAMPLE = 5000  # validation prompts a soft-map router keeps to turn budgets into lambda


class LearnedMapKind(ClusterKind):
    """UniRoute LearnedMap: Phi(x) is the map's softmax over the K-means clusters."""

    name = "learnedmap"
    title = "UniRoute (LearnedMap)"
    report_mark = "*"  # as in the paper's table

    def tune(self, engine: TuningEngine, n_val: int) -> Tuned:
        """K-means' K (at least 2: one cluster is a constant map)."""
        # As the paper's appendix does for its static-pool LearnedMap. One map per trial instead of one per
        # searched K; on RouterBench the map at K-means' K routed as well as at a K searched for it (0.7875 vs
        # 0.7840).
        kmeans = engine.tune(KMEANS.name, n_val)
        return Tuned(self.name, max(2, kmeans.value), search=kmeans.search)

    def untuned(self, n_val: int, n_train: int) -> Tuned | None:
        """None: a LearnedMap cannot be trained without training LLMs."""
        return None

    def measured_gamma(self, engine: TuningEngine, k: int, smp: OnboardingSample, psi_t: np.ndarray) -> np.ndarray:
        """Phi . Psi, training prompts routed by maps fitted on the other half of them (engine.heldout_phi)."""
        phi = np.concatenate([engine.heldout_phi(k)[smp.rest], engine.val_map_phi(k)[smp.vrows]])
        return phi @ psi_t

    def test_membership(self, state: HeldOutState, k: int) -> np.ndarray:
        """(n_te, K) the LearnedMap's Phi of the test prompts."""
        return state.test_map_phi(k)

    def served_router(self, engine: TuningEngine, tuned: Tuned, embedder_id: str, models: Sequence[str],
                      losses: np.ndarray, costs: np.ndarray, val_prompt_ids: Sequence[str]) -> Router:
        """The map's router, keeping a seeded sample of the validation prompts to turn budgets into lambda."""
        n_val = losses.shape[0]
        psi = psi_from_losses(engine.val_cluster(tuned.value)[:n_val], losses, tuned.value, list(models))
        rng = np.random.default_rng(engine.data.seed)
        keep = np.sort(rng.permutation(n_val)[:REFERENCE_SAMPLE])
        return Router(embedder_id, psi.models, costs, psi.values, engine.learned_map(tuned.value), psi.counts,
                      reference=engine.data.X_val[keep])

    def map_arrays(self, assigner: LearnedMap) -> dict[str, np.ndarray]:
        """The map's layers `w1` ... `b3`, and `centers` when it keeps its K-means clusters."""
        arrays = {name: getattr(assigner, name) for name in LAYERS}
        if assigner.clusters is not None:
            arrays["centers"] = assigner.clusters.centers
        return arrays

    def assigner_from(self, maps: dict[str, np.ndarray]) -> Any:
        """The LearnedMap from its stored layers (and clusters)."""
        clusters = Centroids(maps["centers"]) if "centers" in maps else None
        return LearnedMap(**{name: maps[name] for name in LAYERS}, clusters=clusters)


LEARNED_MAP = LearnedMapKind()
