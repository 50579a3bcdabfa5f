"""Router versions in the store: write a version (never overwrite), load one, find the champion.

A version is stored as plain rows (centroids, Psi, costs, metrics, curves) plus the router as npz bytes
(`routers.serialize`, no pickle); an embedder that is not rebuilt from the installed package alone (TF-IDF, the
static and ONNX models; `embed.portable`) is stored once per embedder id in `fitted_embedders`, so every version
built on it, child versions included, embeds prompts exactly as it was fitted, wherever it runs.
Every function works on the caller's connection (a store session for writes).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uniroute import embed, store
from uniroute.embed import embedder_state
from uniroute.errors import UnirouteError
from uniroute.pipeline.pool.psi_data import cost_frame
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.serialize import AnyRouter, router_from_bytes, router_to_bytes


class NoRouter(UnirouteError, LookupError):
    """No router version by that id, or no champion yet (nothing built)."""


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
    created_at: datetime
    router: AnyRouter  # a router of the registered kind `kind` (routers.kinds)
    embedder_state: bytes | None = None  # the stored embedder (embed.portable); None when rebuilt by name
    price_snapshot: str | None = None  # which prices its costs came from (price_snapshot); None: before prices

    def embedder(self, progress: bool = False, cache_dir: Path | None = None) -> Any:
        """The embedder this router was fitted with: restored from its stored state, or loaded by its name."""

        if self.embedder_state is not None:
            return embed.embedder_from_state(self.embedder_state, cache_dir, progress=progress)
        return embed.make_embedder(embedder_name(self.router.embedder_id), progress=progress, cache_dir=cache_dir)


def embedder_name(embedder_id: str) -> str:
    """The embedder's name ("minilm", "tfidf") from its id ("minilm:all-MiniLM-L6-v2@...")."""
    return embedder_id.split(":", 1)[0]


def new_router_id(kind: str) -> str:
    """A unique, sortable router id: kind, UTC time, random suffix."""
    return f"{kind}-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def router_clustering_id(router: AnyRouter) -> str:
    """The clustering a router measures Psi rows on; a kind without clusters (K-NN) names what stands for it."""
    return router.clustering_id()


def router_centroids(router: AnyRouter) -> Centroids | None:
    """The K-means centroids behind a router's Psi (the LearnedMap's clusters too); None without clusters."""
    return router.psi_centroids()


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def save_embedder(con: store.Connection, embedder: Any) -> None:
    """Keep an embedder's state under its id, once (nothing for embedders rebuilt from the package by name)."""

    if not store.query(con, "fitted_embedder", embedder_id=embedder.embedder_id).empty:
        return
    state = embedder_state(embedder)
    if state is not None:
        store.write_frame(con, "fitted_embedders", pd.DataFrame(
            [{"embedder_id": embedder.embedder_id, "state": state, "created_at": _now()}]))


# States read in this process, by store file and embedder id: an id ends with the fingerprint of the embedder's
# files and a stored state is never rewritten, so the pair names one content. An onboarding read the same 30 MB
# state three times (champion, evidence gate, MLflow sync): a second of its own work. The newest few are kept.
_STATES: dict[tuple[str, str], bytes] = {}
_STATES_KEPT = 2


def stored_embedder_state(con: store.Connection, embedder_id: str) -> bytes | None:
    """The stored state of an embedder id, or None (embedders rebuilt by name are not stored)."""
    key = (str((store.query_row(con, "database_path") or ("",))[0]), embedder_id)
    if key in _STATES:
        return _STATES[key]
    row = store.query_row(con, "fitted_embedder", embedder_id=embedder_id)
    if row is None:
        return None
    _STATES[key] = bytes(row[1])
    while len(_STATES) > _STATES_KEPT:
        del _STATES[next(iter(_STATES))]
    return _STATES[key]


@dataclass(frozen=True, eq=False)
class NewVersion:
    """A router version to store: the router, where it comes from, and what is recorded beside it."""

    router: AnyRouter
    router_id: str
    clustering_id: str
    kind: str
    data_fingerprint: str
    val_area: float | None
    promoted: bool
    reason: str
    centroids: Centroids | None = None  # None: nothing to write (K-NN, or a child whose clustering is stored)
    parent_id: str | None = None
    origin: str = "build"  # build, onboard or retire
    candidate_of: str | None = None  # the build router a candidate kind was fitted beside
    metrics: pd.DataFrame | None = None
    curves: pd.DataFrame | None = None
    embedder: Any = None  # a fitted embedder to store (embed.portable), if any
    price_snapshot: str | None = None  # which prices its costs came from (price_snapshot)


def save_router_version(con: store.Connection, version: NewVersion) -> None:
    """Write a router version with its centroids, Psi, costs, metrics and curves (in the caller's transaction)."""
    v = version
    router, router_id, clustering_id, centroids = v.router, v.router_id, v.clustering_id, v.centroids
    # Every version stored (build, onboard, retire) carries its per-cluster model costs, measured here on the
    # validation rows its Psi cells come from, so route, replay, the pyfunc and the flows cap on the same numbers.
    router = router.with_cluster_costs(
        cost_frame(con, store.query(con, "val_prompt_clusters", clustering_id=clustering_id)))
    version_row = pd.DataFrame([{
        "router_id": router_id, "parent_id": v.parent_id, "origin": v.origin, "candidate_of": v.candidate_of,
        "clustering_id": clustering_id, "kind": v.kind, "embedder_id": router.embedder_id, "k": int(router.k),
        "models": list(router.models), "val_area": v.val_area, "promoted": v.promoted, "reason": v.reason,
        "data_fingerprint": v.data_fingerprint, "router": router_to_bytes(router), "created_at": _now(),
        "price_snapshot": v.price_snapshot,
    }])
    if centroids is not None and not bool(store.query(con, "centroids_exist", clustering_id=clustering_id).iloc[0, 0]):
        centers = centroids.centers.astype(np.float32)
        store.write_frame(con, "centroids", pd.DataFrame({
            "clustering_id": clustering_id,
            "cluster": np.arange(len(centers), dtype=np.int32),
            "center": [row.tolist() for row in centers],
        }))
    if v.embedder is not None:
        save_embedder(con, v.embedder)
    store.write_frame(con, "routers", version_row)
    psi = psi_table(router)
    if len(psi):
        store.write_frame(con, "psi", psi.assign(router_id=router_id))
    store.write_frame(con, "router_costs", pd.DataFrame(
        {"router_id": router_id, "model": list(router.models), "cost": router.costs.astype(float)}))
    if v.metrics is not None and len(v.metrics):
        store.write_frame(con, "router_metrics", v.metrics.assign(router_id=router_id))
    if v.curves is not None and len(v.curves):
        store.write_frame(con, "router_curves", v.curves.assign(router_id=router_id))


def _version_from_row(con: store.Connection, row: pd.Series, embedder: bool = True) -> RouterVersion:
    router = router_from_bytes(bytes(row["router"]))
    return RouterVersion(
        router_id=row["router_id"],
        parent_id=row["parent_id"] if isinstance(row["parent_id"], str) else None,
        clustering_id=row["clustering_id"],
        kind=row["kind"],
        val_area=None if pd.isna(row["val_area"]) else float(row["val_area"]),
        promoted=bool(row["promoted"]),
        reason=row["reason"],
        created_at=row["created_at"],
        router=router,
        embedder_state=stored_embedder_state(con, router.embedder_id) if embedder else None,
        price_snapshot=row.get("price_snapshot") if isinstance(row.get("price_snapshot"), str) else None,
    )


def price_snapshot(con: store.Connection) -> str:
    """Which prices the costs routing reads now (sql/queries/model_val_costs.sql) come from: "AS_OF/SET_BY", the
    date prices are in force on and the newest price set by then ("AS_OF/no prices": the logs' costs alone). The
    in-force prices are reproducible from it: rows of `prices` set by SET_BY, valid by AS_OF, the newest per model."""
    row = store.query(con, "price_snapshot").iloc[0]  # a frame: the result is fetched whole, the connection free
    as_of, set_by = pd.Timestamp(row["as_of"]).date(), row["set_by"]
    return f"{as_of}/{'no prices' if pd.isna(set_by) else pd.Timestamp(set_by).isoformat(timespec='microseconds')}"


def version_embedder(con: store.Connection, version: RouterVersion, progress: bool = False,
                     cache_dir: Path | None = None) -> Any:
    """The embedder of a version loaded without its state (embedder=False), the state read only now: an onboarding
    whose prompts are all embedded already never reads the 30 MB it would not use."""
    if version.embedder_state is None:
        version = replace(version, embedder_state=stored_embedder_state(con, version.router.embedder_id))
    return version.embedder(progress=progress, cache_dir=cache_dir)


def load_router_version(con: store.Connection, router_id: str, embedder: bool = True) -> RouterVersion:
    """A stored router version by id (embedder False: without its embedder's state, which the caller has)."""
    rows = store.query(con, "router_by_id", router_id=router_id)
    if rows.empty:
        raise NoRouter(f"no router version {router_id!r} in the store")
    return _version_from_row(con, rows.iloc[0], embedder)


def load_champion(con: store.Connection, embedder: bool = True) -> RouterVersion:
    """The champion: the router version that routes and gets published (the newest promoted one, or the one a
    later rollback chose); embedder False: without its embedder's state, which the caller has."""
    rows = store.query(con, "router_champion")
    if rows.empty:
        raise NoRouter("no champion router in the store: run `uniroute build` first")
    return _version_from_row(con, rows.iloc[0], embedder)


def champion_id(con: store.Connection) -> str | None:
    """The champion's router id, or None before the first build."""
    rows = store.query(con, "champion_id")
    return None if rows.empty else str(rows.router_id.iloc[0])


def champion_val_area(con: store.Connection) -> float | None:
    """The champion's validation Area, or None when there is no champion yet (or it has none)."""
    rows = store.query(con, "champion_id")
    return None if rows.empty or pd.isna(rows.val_area.iloc[0]) else float(rows.val_area.iloc[0])


def psi_table(router: AnyRouter) -> pd.DataFrame:
    """Long table of a router's Psi (RoutingRule.psi_table): model, cluster, loss (measured), n, routing_loss,
    error_lo / error_hi and sparse; no rows for a kind without clusters (K-NN)."""
    return router.psi_table()


def data_fingerprint(con: store.Connection) -> str:
    """A short hash of every ingested file: two builds on the same data share it."""
    files = store.query(con, "data_fingerprint").iloc[0, 0]
    return hashlib.sha256(files.encode()).hexdigest()[:16]
