"""A store whose champion is a small saved router (no build, no MLflow): cheap, big and mid, mid retired."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving.publish import PublishResult, publish_champion
from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of
from uniroute.routers.router import Router


def save_toy_champion(db_path: Path) -> Path:
    """Save router r-001 as the promoted champion and its three models (mid retired); db_path back."""
    router = Router("toy-embedder", ("cheap", "big", "mid"), np.array([1.0, 10.0, 5.0]),
                    np.array([[0.1, 0.9], [0.5, 0.1], [0.6, 0.6]]),
                    Centroids(np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32)))
    with store.session(db_path, "test") as s:
        registry.save_router_version(s.con, registry.NewVersion(
            router, "r-001", clustering_id_of(router.assigner), "kmeans", "fp-1", 0.7, True, "test",
            centroids=router.assigner))
        store.write_frame(s.con, "models", pd.DataFrame({
            "model": ["cheap", "big", "mid"], "default_cost": 1.0, "status": ["active", "active", "retired"],
            "first_seen": pd.Timestamp("2026-01-01")}))
    return db_path


def publish_in_session(db_path: Path, published: Path, force: bool = False) -> PublishResult:
    """publish_champion in its own store session (as the publish operation runs it, without the switch)."""
    with store.session(db_path, "publish") as s:
        return publish_champion(s.con, published, force=force)
