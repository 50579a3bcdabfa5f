"""Pairwise evidence in the pipeline: the validation prompts of battles get a cluster on the frozen centroids.

A build assigns the prompts of its results; battles may sit on prompts no model has results for, so their
validation prompts are embedded (through the cache) and assigned here before Psi is computed, in the build and
in onboarding alike. Prompts already assigned under the clustering are never embedded again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from uniroute import embed, store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.pool.psi_data import onboard_psi
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.kinds import router_kind

log = logging.getLogger(__name__)


def assign_battle_prompts(con: store.Connection, clustering_id: str, centroids: Centroids,
                          embedder_of: Callable[[], Any]) -> int:
    """Embed and assign the validation prompts of battles without a cluster under this clustering; how many."""
    new = store.query(con, "unassigned_battle_prompts", clustering_id=clustering_id)
    if new.empty:
        return 0

    X = embed.embed_cached(con, new["text"].tolist(), embedder_of())
    store.write_frame(con, "cluster_assignments", pd.DataFrame({
        "clustering_id": clustering_id,
        "prompt_id": new["prompt_id"].to_numpy(),
        "cluster": centroids.assign(X).astype(np.int32),
    }))
    log.info("assigned %d validation prompts of battles to clusters of %s", len(new), clustering_id)
    return len(new)


def with_battle_models(con: store.Connection, router: Any, embedder_of: Callable[[], Any]) -> tuple[Any, str]:
    """The build's served router with a Psi row for every active model that has battles on validation prompts
    but no results there, fitted against the router's rows (kept fixed), and a note for the build ('' if none).

    Only kinds with clusters for Psi rows can take them: a kind without (K-NN) routes by per-prompt labels,
    which battles do not give.
    """

    val_costs = store.query(con, "model_val_costs")
    battle_only = val_costs[val_costs["n"] == 0]  # battles on validation prompts, no results there
    costs = dict(zip(battle_only["model"], battle_only["cost"], strict=True))
    models = [m for m in costs if m not in router.models]
    if not models:
        return router, ""
    centroids = router.psi_centroids()
    if centroids is None:
        name = router_kind(router.kind).title or router.kind
        return router, f"battle-only models {models} left out: a {name} router needs per-prompt labels"
    no_cost = [m for m in models if pd.isna(costs[m])]
    if no_cost:
        return router, f"battle-only models {no_cost} left out: no default cost (`uniroute models set-cost`)"
    clustering_id = registry.router_clustering_id(router)
    assign_battle_prompts(con, clustering_id, centroids, embedder_of)
    val_clusters = store.query(con, "val_prompt_clusters", clustering_id=clustering_id)
    psi = onboard_psi(con, val_clusters, models, router)
    for i, model in enumerate(psi.models):
        counts = psi.counts[i] if router.psi_counts is not None else None
        router = router.with_model(model, psi.values[i], float(costs[model]), counts)
    log.info("battle-only models joined the build's router: %s", list(psi.models))
    return router, ""
