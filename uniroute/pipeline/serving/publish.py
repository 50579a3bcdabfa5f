"""Publishing: the champion's routing tables for the active pool, as a versioned snapshot recorded in the store.

Order of a publish (inside the caller's session): the complete folder is written under its version name, the
version is recorded in `publications` (with its tables) in the session's transaction, and only after that
commits is `published/current` switched to it (`switch_current_after_commit`). A publisher killed before the
commit leaves a folder no publication records (reconciliation removes it); killed after it, a `current` one
version behind (reconciliation re-points it). `current` never names a version the store does not record.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.faults import crashpoint
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving import quick_route, snapshot
from uniroute.pipeline.serving.calibration import TrafficWindow, traffic_calibration
from uniroute.routers.serialize import router_to_bytes
from uniroute.routers.tables import BUDGETS, NORMALISED_LAMBDAS, RoutingTables, routing_tables

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PublishResult:
    """What a publish did: the version recorded, or why nothing was published."""

    published: bool
    version: str | None
    router_id: str
    pool: tuple[str, ...]
    reason: str
    path: Path | None = None

    def as_dict(self) -> dict:
        return {**self.__dict__, "path": str(self.path) if self.path else None, "pool": list(self.pool)}

    def line(self) -> str:
        return f"published {self.version} -> {self.path}" if self.published else self.reason


def fingerprint(router_id: str, pool: tuple[str, ...]) -> str:
    """What a snapshot depends on: the router, the pool and the grids. Same fingerprint, nothing to publish."""
    payload = json.dumps({"router": router_id, "pool": sorted(pool), "budgets": BUDGETS, "lambdas": NORMALISED_LAMBDAS})
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def latest_publication(con: store.Connection) -> dict | None:
    """The store's newest publication row, or None."""
    rows = store.query(con, "latest_publication")
    return None if rows.empty else rows.iloc[0].to_dict()


def publish_champion(con: store.Connection, published_dir: Path, force: bool = False,
                     window: TrafficWindow = TrafficWindow()) -> PublishResult:
    """Write and record a snapshot for the champion and the active pool, unless nothing changed since the last."""
    snapshot.check_current_link(published_dir)  # before anything is written: the switch after the commit would fail
    champion = registry.load_champion(con)
    router = champion.router
    active = set(store.query(con, "active_models").model)
    pool = tuple(m for m in router.models if m in active)
    if not pool:
        raise snapshot.PublishError(f"champion {champion.router_id} has no active model to publish (all retired)")
    fp = fingerprint(champion.router_id, pool)
    latest = latest_publication(con)
    if latest is not None and latest["fingerprint"] == fp and not force:
        reason = f"nothing changed since {latest['version']}"
        return PublishResult(False, latest["version"], champion.router_id, pool, reason)
    # Budgets calibrated on the recent traffic when the window holds enough of it (pipeline.serving.calibration); the
    # published rows and the manifest say which mix.
    calibration = traffic_calibration(con, router.embedder_id, window)
    if router.one_hot:
        tables = routing_tables(router, pool, calibration.cluster_weights(router))
    else:
        tables = routing_tables(router, pool, reference=calibration.X)
    tables = RoutingTables(tables.routes, tables.budgets.assign(calibration=calibration.source))
    version = snapshot.new_version(fp)
    # Every kind publishes the table files (a LearnedMap or K-NN router's routes table is empty: it routes per
    # prompt with router.npz); centroids are the clusters Psi rows are measured on, none for K-NN.
    clusters = registry.router_centroids(router)
    centers = clusters.centers if clusters is not None else np.empty((0, 0), dtype=np.float32)
    files = snapshot.table_files(tables, centers)
    files[snapshot.ROUTER_FILE] = router_to_bytes(router)
    files[snapshot.PSI_FILE] = snapshot.frame_bytes(registry.psi_table(router), "parquet")
    if champion.embedder_state is not None:  # the embedder travels with the router (embed.portable)
        files[snapshot.EMBEDDER_FILE] = champion.embedder_state
    # What a one-prompt `uniroute route` reads instead of the store (quick_route): the default setting, once.
    files[quick_route.SERVING_FILE] = quick_route.serving_file(router, pool, files)
    manifest = {
        "router_id": champion.router_id,
        "kind": champion.kind,
        "embedder_id": router.embedder_id,
        "pool": list(pool),
        "fingerprint": fp,
        "created": datetime.now(UTC).isoformat(),
        "price_snapshot": champion.price_snapshot,  # which prices the router's costs came from
        "calibration": calibration.source,  # the prompt mix the budgets' lambdas were computed on
    }
    path = snapshot.write_folder(published_dir, version, files, manifest)
    crashpoint("publish:folder-written")
    checksum = snapshot.read_snapshot(path).manifest["checksum"]
    store.write_frame(con, "publications", pd.DataFrame([{
        "version": version, "router_id": champion.router_id, "embedder_id": router.embedder_id, "pool": list(pool),
        "fingerprint": fp, "checksum": checksum, "path": str(path.resolve()),
        "created_at": datetime.now(UTC).replace(tzinfo=None), "price_snapshot": champion.price_snapshot,
    }]))
    store.write_frame(con, "published_routes", tables.routes.assign(version=version))
    store.write_frame(con, "published_budgets", tables.budgets.assign(version=version))
    crashpoint("publish:recorded")
    log.info("published %s for router %s (%d models)", version, champion.router_id, len(pool))
    return PublishResult(True, version, champion.router_id, pool, "published", path)


def switch_current_after_commit(s: store.Session, published_dir: Path, result: PublishResult) -> None:
    """Make a recorded version current once the session commits (before it lets the next writer in)."""
    if not result.published:
        return

    def switch() -> None:
        crashpoint("publish:before-switch")
        snapshot.make_current(published_dir, str(result.version))

    s.after_commit.append(switch)

