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

    routes: pd.DataFrame  # columns cluster, grid, budget, lambda, model
    budgets: pd.DataFrame  # columns grid, budget, lambda, expected_score, expected_cost


@dataclass(frozen=True)
class Snapshot:
    """A published version read back: its manifest and tables."""

    path: Path
    manifest: dict
    routes: pd.DataFrame
    budgets: pd.DataFrame


def cluster_choice(psi: np.ndarray, costs: np.ndarray, lam: float) -> np.ndarray:
    """(K,) index of the model minimising psi[m, k] + lam * cost[m]; ties go to the cheaper, then lower index."""
    objective = psi.T + lam * costs[None, :]  # (K, M)
    best = objective.min(axis=1, keepdims=True)
    tied = np.isclose(objective, best, rtol=0.0, atol=1e-12)
    # Among tied models prefer the cheapest; lexsort keys are applied last-first.
    order = np.lexsort((np.arange(len(costs)), costs))
    ranked = tied[:, order]
    return order[ranked.argmax(axis=1)]


def _expected(psi: np.ndarray, costs: np.ndarray, weights: np.ndarray, choice: np.ndarray) -> tuple[float, float]:
    """Expected score and normalised cost of a per-cluster choice under cluster weights (sum to 1)."""
    k = np.arange(psi.shape[1])
    score = float(np.sum(weights * (1.0 - psi[choice, k])))
    cost = float(np.sum(weights * costs[choice]) / costs.max())
    return score, cost


def lambda_for_cluster_budget(psi: np.ndarray, costs: np.ndarray, weights: np.ndarray, budget: float) -> float:
    """Smallest lambda whose expected normalised cost (cluster-weighted) is within the budget fraction."""
    # Switch points: for each cluster, the lambdas where two models tie. Checking 0 and every switch point
    # (just above it) finds the exact smallest feasible lambda; the cost is non-increasing in lambda.
    gaps = []
    for kk in range(psi.shape[1]):
        dl = psi[:, kk][:, None] - psi[:, kk][None, :]
        dc = costs[None, :] - costs[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = dl / dc
        gaps.append(lam[np.isfinite(lam) & (lam > 0)])
    candidates = np.unique(np.concatenate([[0.0], *gaps]))
    for lam in candidates:
        lam_eff = float(np.nextafter(lam, np.inf)) if lam > 0 else 0.0
        _, cost = _expected(psi, costs, weights, cluster_choice(psi, costs, lam_eff))
        if cost <= budget + 1e-12:
            return lam_eff
    return float(candidates[-1] * 2 + 1.0)


def routing_tables(psi: np.ndarray, costs: np.ndarray, models: tuple[str, ...], weights: np.ndarray) -> RoutingTables:
    """Routes and expected score/cost on the budget grid and the lambda grid.

    psi (M, K) losses, costs (M,), weights (K,) share of validation prompts per cluster.
    """
    weights = np.asarray(weights, dtype=float)
    weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(weights), 1.0 / len(weights))
    max_cost = float(costs.max())
    settings: list[tuple[str, float | None, float]] = [
        ("budget", b, lambda_for_cluster_budget(psi, costs, weights, b)) for b in BUDGETS
    ]
    settings += [("lambda", None, lam / max_cost) for lam in NORMALISED_LAMBDAS]
    routes, budgets = [], []
    for grid, budget, lam in settings:
        choice = cluster_choice(psi, costs, lam)
        score, cost = _expected(psi, costs, weights, choice)
        budgets.append({"grid": grid, "budget": budget, "lambda": lam, "expected_score": score, "expected_cost": cost})
        for cluster, m in enumerate(choice):
            routes.append({"cluster": cluster, "grid": grid, "budget": budget, "lambda": lam, "model": models[m]})
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
