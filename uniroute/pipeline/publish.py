"""Published routing tables: per cluster, the model to use at each budget and lambda, as atomic snapshots.

A snapshot is written to a temporary folder, renamed into `published/<version>/` and only then made
`published/current` by an atomic symlink swap, so a reader never sees a half-written table and a crash
mid-publish leaves the previous `current` in place.
"""


from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from uniroute import store
from uniroute.pipeline import registry
from uniroute.pipeline.snapshot import (
    SNAPSHOT_FILES,
    PublishError,
    current_manifest,
    new_version,
    read_snapshot,
    write_snapshot,
)
from uniroute.routers.tables import BUDGETS, NORMALISED_LAMBDAS, routing_tables, validation_weights

log = logging.getLogger(__name__)

def fingerprint(router_id: str, pool: tuple[str, ...]) -> str:
    """What a snapshot depends on: the router, the pool and the grids. Same fingerprint, nothing to publish."""
    payload = json.dumps({"router": router_id, "pool": sorted(pool), "budgets": BUDGETS, "lambdas": NORMALISED_LAMBDAS})
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class PublishResult:
    """What a publish did: the version made current, or why nothing was published."""

    published: bool
    version: str | None
    router_id: str
    pool: tuple[str, ...]
    reason: str
    path: Path | None = None
    mlflow_run_id: str | None = None

    def as_dict(self) -> dict:
        return {**self.__dict__, "path": str(self.path) if self.path else None, "pool": list(self.pool)}


def publish_champion(
    db_path: Path, published_dir: Path, tracking_uri: str | None, artifact_root: Path | None, force: bool = False
) -> PublishResult:
    """Publish routing tables for the champion router and the active pool, unless nothing changed."""
    from uniroute.pipeline import tracking

    champion = registry.load_champion(db_path, read_only=False)
    router = champion.router
    with store.opened(db_path) as con:
        active = set(store.query(con, "active_models").model)
    pool = tuple(m for m in router.models if m in active)
    if not pool:
        raise PublishError(f"champion {champion.router_id} has no active model to publish (all retired)")
    fp = fingerprint(champion.router_id, pool)
    current = current_manifest(published_dir)
    if current is not None and current.get("fingerprint") == fp and not force:
        reason = f"nothing changed since {current['version']}"
        return PublishResult(False, current["version"], champion.router_id, pool, reason)
    tables = routing_tables(router, pool, validation_weights(router))
    version = new_version(fp)
    manifest = {
        "router_id": champion.router_id,
        "mlflow_run_id": champion.mlflow_run_id,
        "embedder_id": router.embedder_id,
        "pool": list(pool),
        "fingerprint": fp,
        "created": datetime.now(UTC).isoformat(),
    }
    path = write_snapshot(published_dir, version, tables, router.assigner.centers, manifest)
    snapshot = read_snapshot(path)
    run_id = None
    if tracking_uri is not None and artifact_root is not None:
        run_id = tracking.log_publish(
            tracking_uri,
            artifact_root,
            router_id=champion.router_id,
            params={"version": version, "pool": ",".join(pool), "fingerprint": fp},
            artifacts={name: path / name for name in (*SNAPSHOT_FILES, "manifest.json")},
        )
    with store.opened(db_path) as con, store.transaction(con):
        store.write_frame(
            con,
            "publications",
            pd.DataFrame(
                [
                    {
                        "version": version,
                        "router_id": champion.router_id,
                        "mlflow_run_id": run_id,
                        "embedder_id": router.embedder_id,
                        "pool": list(pool),
                        "fingerprint": fp,
                        "checksum": snapshot.manifest["checksum"],
                        "path": str(path.resolve()),
                        "created_at": datetime.now(UTC).replace(tzinfo=None),
                    }
                ]
            ),
        )
        store.write_frame(con, "published_routes", tables.routes.assign(version=version))
        store.write_frame(con, "published_budgets", tables.budgets.assign(version=version))
    log.info("published %s for router %s (%d models)", version, champion.router_id, len(pool))
    return PublishResult(True, version, champion.router_id, pool, "published", path, run_id)
