"""Published routing tables: per cluster, the model to use at each budget and lambda, as atomic snapshots.

A snapshot is written to a temporary folder, renamed into `published/<version>/` and only then made
`published/current` by an atomic symlink swap, so a reader never sees a half-written table and a crash
mid-publish leaves the previous `current` in place.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute.route import Router

log = logging.getLogger(__name__)

BUDGETS = tuple(round(0.1 * i, 1) for i in range(1, 11))
# Lambda in units of loss per (cost / most expensive pool model's cost), so the grid means the same
# thing whether costs are USD per query or billions of parameters.
NORMALISED_LAMBDAS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
SNAPSHOT_FILES = ("routes.parquet", "routes.json", "budgets.parquet", "budgets.json", "centroids.parquet")


class PublishError(RuntimeError):
    """A snapshot that cannot be published or read back intact."""


@dataclass(frozen=True)
class RoutingTables:
    """What a gateway needs: routes (cluster x setting -> model) and expected score/cost per setting."""

    routes: pd.DataFrame  # columns cluster, grid, budget, lam (lambda), model
    budgets: pd.DataFrame  # columns grid, budget, lam, expected_score, expected_cost


@dataclass(frozen=True)
class Snapshot:
    """A published version read back: its manifest and tables."""

    path: Path
    manifest: dict
    routes: pd.DataFrame
    budgets: pd.DataFrame


def _cheapest_lambda(costs: np.ndarray) -> float:
    """A lambda past every switch: losses differ by at most 1, so beyond 1 / (smallest cost gap) the cheapest wins."""
    gaps = np.diff(np.unique(costs))
    return float(2.0 / gaps.min()) if len(gaps) else 0.0


def validation_weights(router: Router) -> np.ndarray:
    """(K,) validation prompts per cluster: the largest count behind any model's Psi cell in that cluster."""
    if router.psi_counts is None:
        return np.ones(router.k, dtype=np.int64)
    return router.psi_counts.max(axis=0)


def validation_proxy(router: Router) -> np.ndarray:
    """Centroids repeated by their validation counts: an exact stand-in for the validation prompts.

    Each centroid is its own nearest centroid, so a one-hot router routes this proxy exactly as it routes
    the validation prompts; turning a budget into lambda needs nothing else.
    """
    weights = validation_weights(router)
    return np.repeat(router.assigner.centers, np.maximum(weights, 0), axis=0)


def routing_tables(router: Router, pool: tuple[str, ...], cluster_weights: np.ndarray) -> RoutingTables:
    """Routes and expected score/cost on the budget grid and the lambda grid (one-hot routers only).

    cluster_weights (K,): validation prompts per cluster. Expected score and cost are validation
    estimates: the share of each cluster times the chosen model's Psi and cost.
    """
    weights = np.maximum(np.asarray(cluster_weights, dtype=np.int64), 0)
    if weights.sum() == 0:
        weights = np.ones(router.k, dtype=np.int64)
    proxy_val = np.repeat(router.assigner.centers, weights, axis=0)
    share = weights / weights.sum()
    pool_idx = router.pool_indices(pool)
    pool_costs = router.costs[pool_idx]
    max_cost = float(pool_costs.max())
    settings: list[tuple[str, float | None, float]] = []
    for budget in BUDGETS:
        try:
            lam = router.lambda_for_budget(proxy_val, budget, pool)
        except ValueError:  # below the cheapest routing: publish the cheapest, its expected cost says so
            lam = _cheapest_lambda(pool_costs)
        settings.append(("budget", budget, lam))
    settings += [("lambda", None, lam / max_cost) for lam in NORMALISED_LAMBDAS]
    clusters = np.arange(router.k)
    routes, budgets = [], []
    for grid, budget, lam in settings:
        choice = router.cluster_table(lam, pool)
        budgets.append(
            {
                "grid": grid,
                "budget": budget,
                "lam": lam,
                "expected_score": float(share @ (1.0 - router.psi[choice, clusters])),
                "expected_cost": float(share @ router.costs[choice]) / max_cost,
            }
        )
        routes += [
            {"cluster": int(c), "grid": grid, "budget": budget, "lam": lam, "model": router.models[m]}
            for c, m in enumerate(choice)
        ]
    return RoutingTables(routes=pd.DataFrame(routes), budgets=pd.DataFrame(budgets))


def fingerprint(router_id: str, pool: tuple[str, ...]) -> str:
    """What a snapshot depends on: the router, the pool and the grids. Same fingerprint, nothing to publish."""
    payload = json.dumps({"router": router_id, "pool": sorted(pool), "budgets": BUDGETS, "lambdas": NORMALISED_LAMBDAS})
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _frame_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "json":
        return frame.to_json(orient="records", indent=1).encode()
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def checksum_of(files: dict[str, bytes]) -> str:
    """sha256 over the snapshot's files, in name order."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def _write_durably(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _remove_stale_staging(published_dir: Path) -> None:
    """Delete staging folders left by publishers that were killed (their pid no longer runs)."""
    for path in published_dir.glob(".staging-*"):
        pid = int(path.name.rsplit("-", 1)[-1])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
            log.info("removed %s left by a killed publisher", path)


def write_snapshot(
    published_dir: Path, version: str, tables: RoutingTables, centers: np.ndarray, manifest: dict
) -> Path:
    """Write a complete snapshot under published/<version>/ and switch published/current to it atomically."""
    published_dir.mkdir(parents=True, exist_ok=True)
    final = published_dir / version
    if final.exists():
        raise PublishError(f"published version {version} already exists at {final}")
    files = {
        "routes.parquet": _frame_bytes(tables.routes, "parquet"),
        "routes.json": _frame_bytes(tables.routes, "json"),
        "budgets.parquet": _frame_bytes(tables.budgets, "parquet"),
        "budgets.json": _frame_bytes(tables.budgets, "json"),
        "centroids.parquet": _frame_bytes(
            pd.DataFrame({"cluster": np.arange(len(centers)), "center": [c.tolist() for c in centers]}), "parquet"
        ),
    }
    manifest = {**manifest, "version": version, "files": sorted(files), "checksum": checksum_of(files)}
    _remove_stale_staging(published_dir)
    staging = published_dir / f".staging-{version}-{os.getpid()}"
    staging.mkdir()
    for name, data in files.items():
        _write_durably(staging / name, data)
    # The manifest is written last: a folder with a manifest is complete.
    _write_durably(staging / "manifest.json", json.dumps(manifest, indent=1, default=str).encode())
    os.rename(staging, final)
    link = published_dir / f".current-{os.getpid()}"
    if link.is_symlink():
        link.unlink()
    os.symlink(version, link)
    os.replace(link, published_dir / "current")  # rename(2) over the old link: atomic for readers
    dir_fd = os.open(published_dir, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return final


def read_snapshot(path: Path) -> Snapshot:
    """Read a published folder and verify its checksum against the manifest."""
    manifest_path = path / "manifest.json"
    if not manifest_path.exists():
        raise PublishError(f"{path} has no manifest.json: not a complete snapshot")
    manifest = json.loads(manifest_path.read_text())
    files = {name: (path / name).read_bytes() for name in manifest["files"]}
    actual = checksum_of(files)
    if actual != manifest["checksum"]:
        raise PublishError(f"checksum mismatch in {path}: manifest {manifest['checksum']}, files {actual}")
    return Snapshot(
        path=path,
        manifest=manifest,
        routes=pd.read_parquet(io.BytesIO(files["routes.parquet"])),
        budgets=pd.read_parquet(io.BytesIO(files["budgets.parquet"])),
    )


def read_current(published_dir: Path) -> Snapshot:
    """The snapshot `current` points at; the link is resolved once so every file comes from one version."""
    current = published_dir / "current"
    if not current.exists():
        raise PublishError(f"nothing published yet under {published_dir}: run `uniroute publish`")
    return read_snapshot(Path(os.path.realpath(current)))


def current_manifest(published_dir: Path) -> dict | None:
    """The manifest of the current snapshot, or None when nothing is published."""
    try:
        return read_current(published_dir).manifest
    except PublishError:
        return None


def new_version(fp: str) -> str:
    """A sortable version name: UTC time to the microsecond plus the fingerprint."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-{fp[:8]}"


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
    from uniroute import registry, store, tracking

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
