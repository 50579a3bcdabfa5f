"""Router versions in the store: write a version (never overwrite), load one, find the champion."""

from __future__ import annotations

import hashlib
import pickle
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.routers.kmeans import Centroids
from uniroute.routers.router import Router


@dataclass(frozen=True)
class RouterVersion:
    """One stored router version and its lineage."""

    router_id: str
    parent_id: str | None
    clustering_id: str
    kind: str
    val_area: float | None
    promoted: bool
    reason: str
    mlflow_run_id: str | None
    created_at: datetime
    router: Router
    fitted_embedder: object | None = None  # the fitted TF-IDF embedder; None for embedders loaded by name

    def embedder(self, progress: bool = False):
        """The embedder this router was fitted with: the stored fitted one, or loaded by its name."""
        if self.fitted_embedder is not None:
            return self.fitted_embedder
        from uniroute import embed

        return embed.make_embedder(embedder_name(self.router.embedder_id), progress=progress)


def embedder_name(embedder_id: str) -> str:
    """The embedder's name ("minilm", "tfidf") from its id ("minilm:all-MiniLM-L6-v2@...")."""
    return embedder_id.split(":", 1)[0]


def new_router_id(kind: str) -> str:
    """A unique, sortable router id: kind, UTC time, random suffix."""
    return f"{kind}-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def clustering_id_of(centroids: Centroids) -> str:
    """Content id of a set of centroids: the same centres give the same id."""
    return (
        "kmeans-" + hashlib.sha256(np.ascontiguousarray(centroids.centers, dtype=np.float32).tobytes()).hexdigest()[:16]
    )


def save_router_version(
    db_path: Path,
    router: Router,
    router_id: str,
    clustering_id: str,
    centroids: Centroids,
    kind: str,
    data_fingerprint: str,
    val_area: float | None,
    promoted: bool,
    reason: str,
    parent_id: str | None = None,
    mlflow_run_id: str | None = None,
    metrics: pd.DataFrame | None = None,
    curves: pd.DataFrame | None = None,
    fitted_embedder: object | None = None,
) -> None:
    """Write a router version with its centroids, Psi, costs, metrics and curves in one transaction."""
    k = router.k
    psi_rows = psi_table(router).assign(router_id=router_id)
    cost_rows = pd.DataFrame({"router_id": router_id, "model": list(router.models), "cost": router.costs.astype(float)})
    version_row = pd.DataFrame(
        [
            {
                "router_id": router_id,
                "parent_id": parent_id,
                "clustering_id": clustering_id,
                "kind": kind,
                "embedder_id": router.embedder_id,
                "k": int(k),
                "models": list(router.models),
                "val_area": val_area,
                "promoted": promoted,
                "reason": reason,
                "mlflow_run_id": mlflow_run_id,
                "data_fingerprint": data_fingerprint,
                "artifact": pickle.dumps(router, protocol=pickle.HIGHEST_PROTOCOL),
                # Fitted embedders (TF-IDF) travel with the router so routing and onboarding can embed.
                "embedder_artifact": None
                if fitted_embedder is None
                else pickle.dumps(fitted_embedder, protocol=pickle.HIGHEST_PROTOCOL),
                "created_at": datetime.now(UTC).replace(tzinfo=None),
            }
        ]
    )
    with store.opened(db_path) as con, store.transaction(con):
        exists = store.query(con, "centroids_exist", clustering_id=clustering_id)
        if not bool(exists.iloc[0, 0]):
            centers = centroids.centers.astype(np.float32)
            store.write_frame(
                con,
                "centroids",
                pd.DataFrame(
                    {
                        "clustering_id": clustering_id,
                        "cluster": np.arange(len(centers), dtype=np.int32),
                        "center": [row.tolist() for row in centers],
                    }
                ),
            )
        store.write_frame(con, "routers", version_row)
        store.write_frame(con, "psi", psi_rows)
        store.write_frame(con, "router_costs", cost_rows)
        if metrics is not None and len(metrics):
            store.write_frame(con, "router_metrics", metrics.assign(router_id=router_id))
        if curves is not None and len(curves):
            store.write_frame(con, "router_curves", curves.assign(router_id=router_id))


def _version_from_row(row: pd.Series) -> RouterVersion:
    return RouterVersion(
        router_id=row["router_id"],
        parent_id=row["parent_id"] if isinstance(row["parent_id"], str) else None,
        clustering_id=row["clustering_id"],
        kind=row["kind"],
        val_area=None if pd.isna(row["val_area"]) else float(row["val_area"]),
        promoted=bool(row["promoted"]),
        reason=row["reason"],
        mlflow_run_id=row["mlflow_run_id"] if isinstance(row["mlflow_run_id"], str) else None,
        created_at=row["created_at"],
        router=pickle.loads(bytes(row["artifact"])),
        fitted_embedder=None if row["embedder_artifact"] is None or pd.isna(row["embedder_artifact"])
        else pickle.loads(bytes(row["embedder_artifact"])),
    )


def load_router_version(db_path: Path, router_id: str, read_only: bool = True) -> RouterVersion:
    """A stored router version by id."""
    with store.opened(db_path, read_only=read_only) as con:
        rows = store.query(con, "router_by_id", router_id=router_id)
    if rows.empty:
        raise LookupError(f"no router version {router_id!r} in {db_path}")
    return _version_from_row(rows.iloc[0])


def load_champion(db_path: Path, kind: str = "kmeans", read_only: bool = True) -> RouterVersion:
    """The newest promoted router version of a kind: the one that routes and gets published."""
    with store.opened(db_path, read_only=read_only) as con:
        rows = store.query(con, "router_champion", kind=kind)
    if rows.empty:
        raise LookupError(f"no champion {kind} router in {db_path}: run `uniroute build` first")
    return _version_from_row(rows.iloc[0])


def has_champion(db_path: Path, kind: str = "kmeans") -> bool:
    """Whether a promoted router of this kind exists (False for a store without one, or no store)."""
    if not Path(db_path).exists():
        return False
    with store.opened(db_path, read_only=True) as con:
        return not store.query(con, "router_champion", kind=kind).empty


def champion_val_area(db_path: Path, kind: str = "kmeans") -> float | None:
    """The champion's validation Area, or None when there is no champion yet."""
    try:
        return load_champion(db_path, kind=kind, read_only=False).val_area
    except LookupError:
        return None


def psi_table(router: Router) -> pd.DataFrame:
    """Long table of a router's Psi: model, cluster, loss, n."""
    k = router.k
    counts = router.psi_counts if router.psi_counts is not None else np.zeros_like(router.psi, dtype=np.int64)
    return pd.DataFrame(
        {
            "model": np.repeat(np.array(router.models, dtype=object), k),
            "cluster": np.tile(np.arange(k), len(router.models)),
            "loss": router.psi.reshape(-1),
            "n": counts.reshape(-1),
        }
    )


def data_fingerprint(db_path: Path) -> str:
    """A short hash of every ingested file: two builds on the same data share it."""
    with store.opened(db_path) as con:
        files = store.query(con, "data_fingerprint").iloc[0, 0]
    return hashlib.sha256(files.encode()).hexdigest()[:16]
