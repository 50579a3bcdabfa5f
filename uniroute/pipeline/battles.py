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

from uniroute import store
from uniroute.routers.kmeans import Centroids

log = logging.getLogger(__name__)


def assign_battle_prompts(con: store.Connection, clustering_id: str, centroids: Centroids,
                          embedder_of: Callable[[], Any]) -> int:
    """Embed and assign the validation prompts of battles without a cluster under this clustering; how many."""
    new = store.query(con, "unassigned_battle_prompts", clustering_id=clustering_id)
    if new.empty:
        return 0
    from uniroute import embed

    X = embed.embed_cached(con, new["text"].tolist(), embedder_of())
    store.write_frame(con, "cluster_assignments", pd.DataFrame({
        "clustering_id": clustering_id,
        "prompt_id": new["prompt_id"].to_numpy(),
        "cluster": centroids.assign(X).astype(np.int32),
    }))
    log.info("assigned %d validation prompts of battles to clusters of %s", len(new), clustering_id)
    return len(new)
