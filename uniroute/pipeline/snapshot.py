"""Published routing snapshots on disk: written to a staging folder, renamed into `published/<version>/`, and
made `published/current` by an atomic symlink swap, so a reader never sees a half-written table."""

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

from uniroute.routers.tables import RoutingTables

log = logging.getLogger(__name__)

SNAPSHOT_FILES = ("routes.parquet", "routes.json", "budgets.parquet", "budgets.json", "centroids.parquet")


class PublishError(RuntimeError):
    """A snapshot that cannot be published or read back intact."""


@dataclass(frozen=True)
class Snapshot:
    """A published version read back: its manifest and tables."""

    path: Path
    manifest: dict
    routes: pd.DataFrame
    budgets: pd.DataFrame


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
