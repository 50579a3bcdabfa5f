"""Published routing snapshots on disk: complete folders under `published/<version>/`, and `published/current`.

A folder is written under a staging name and renamed into place only when every file and, last, its manifest
(with a checksum over the files) are on disk: a folder with a manifest is complete. `current` is a symlink
switched by rename(2), so a reader resolves it once and reads one whole version. Writing a folder and switching
`current` are separate steps: publishing records the version in the store between them, and `current` always
follows the store's newest publication (reconciliation re-points it after a crash).

A snapshot carries what a reader needs without the store: the routing tables (Parquet and JSON), the
centroids, each model's Psi, and the router itself as npz (no pickle), plus the fitted embedder where one
cannot be rebuilt by name. The router file is what routes every kind: a K-means router's `routes` table says
the same per cluster, while a LearnedMap or K-NN router (routes per prompt) publishes an empty `routes` table
(and K-NN, which has no clusters, no centroids or Psi rows); its `budgets` rows are filled all the same.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from uniroute.errors import DiskFull, UnirouteError, is_disk_full
from uniroute.faults import disk_full
from uniroute.routers.serialize import AnyRouter, router_from_bytes
from uniroute.routers.tables import RoutingTables

if TYPE_CHECKING:  # imported where a table is read or written: quick_route reads this module's names only
    import pandas as pd

log = logging.getLogger(__name__)

TABLE_FILES = ("routes.parquet", "routes.json", "budgets.parquet", "budgets.json", "centroids.parquet")
ROUTER_FILE = "router.npz"
EMBEDDER_FILE = "embedder.npz"  # only when the router's embedder was fitted (TF-IDF)
PSI_FILE = "psi.parquet"
SNAPSHOT_FILES = TABLE_FILES  # every snapshot has these; published routers add ROUTER_FILE and PSI_FILE
CURRENT = "current"
STAGING_PREFIX = ".staging-"
LINK_PREFIX = ".current-"


class PublishError(UnirouteError, RuntimeError):
    """A snapshot that cannot be published or read back intact."""


@dataclass(frozen=True)
class Snapshot:
    """A published version read back (checksum verified): its manifest, tables and files."""

    path: Path
    manifest: dict
    routes: pd.DataFrame
    budgets: pd.DataFrame
    files: dict[str, bytes]

    @property
    def version(self) -> str:
        return str(self.manifest["version"])

    def router(self) -> AnyRouter:
        """The published router (PublishError for a snapshot written without one)."""
        if ROUTER_FILE not in self.files:
            raise PublishError(f"snapshot {self.version} carries no router")
        return router_from_bytes(self.files[ROUTER_FILE])

    def embedder_state(self) -> bytes | None:
        return self.files.get(EMBEDDER_FILE)

    def table(self, name: str) -> pd.DataFrame:
        """One of the Parquet files as a frame (e.g. "psi.parquet")."""
        import pandas as pd

        return pd.read_parquet(io.BytesIO(self.files[name]))


def frame_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    """A frame as the bytes of a JSON (records) or Parquet file."""
    if fmt == "json":
        return frame.to_json(orient="records", indent=1).encode()
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def table_files(tables: RoutingTables, centers: np.ndarray) -> dict[str, bytes]:
    """The routing tables and centroids as snapshot files."""
    import pandas as pd

    return {
        "routes.parquet": frame_bytes(tables.routes, "parquet"),
        "routes.json": frame_bytes(tables.routes, "json"),
        "budgets.parquet": frame_bytes(tables.budgets, "parquet"),
        "budgets.json": frame_bytes(tables.budgets, "json"),
        "centroids.parquet": frame_bytes(
            pd.DataFrame({"cluster": np.arange(len(centers)), "center": [c.tolist() for c in centers]}), "parquet"
        ),
    }


def checksum_of(files: dict[str, bytes]) -> str:
    """sha256 over the snapshot's files, in name order."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def _write_durably(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        disk_full("snapshot:write", path)
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_folder(published_dir: Path, version: str, files: dict[str, bytes], manifest: dict) -> Path:
    """Write a complete snapshot folder published/<version>/ (staged, then renamed); `current` is not touched."""
    published_dir.mkdir(parents=True, exist_ok=True)
    final = published_dir / version
    if final.exists():
        raise PublishError(f"published version {version} already exists at {final}")
    manifest = {**manifest, "version": version, "files": sorted(files), "checksum": checksum_of(files)}
    staging = published_dir / f"{STAGING_PREFIX}{version}-{os.getpid()}"
    staging.mkdir()
    try:
        for name, data in files.items():
            _write_durably(staging / name, data)
        # The manifest is written last: a folder with a manifest is complete.
        _write_durably(staging / "manifest.json", json.dumps(manifest, indent=1, default=str).encode())
    except OSError as exc:
        # A half-written folder is no use to anyone, and on a full disk it holds the space the user must free.
        shutil.rmtree(staging, ignore_errors=True)
        if is_disk_full(exc):
            raise DiskFull(exc.filename or staging, "nothing was published; the store is unchanged") from None
        raise
    os.rename(staging, final)
    _fsync_dir(published_dir)
    return final


def check_current_link(published_dir: Path) -> None:
    """PublishError naming published/current when it is something other than the link publishing swaps."""
    current = Path(published_dir) / CURRENT
    if current.is_symlink() or not current.exists():
        return
    what = "a directory" if current.is_dir() else "a file"
    # Moved out of published/: inside it, `uniroute doctor` would remove it as a stray snapshot folder.
    aside = Path(published_dir).parent / "current.moved"
    raise PublishError(f"{current} is {what}, not the link to the current snapshot that publishing switches: move "
                       f"it out of the way (mv {current} {aside}) and run `uniroute doctor`")


def make_current(published_dir: Path, version: str) -> None:
    """Point published/current at a complete version by an atomic symlink swap."""
    check_current_link(published_dir)
    if not (published_dir / version / "manifest.json").exists():
        raise PublishError(f"cannot make {version} current: {published_dir / version} is not a complete snapshot")
    link = published_dir / f"{LINK_PREFIX}{os.getpid()}"
    if link.is_symlink():
        link.unlink()
    os.symlink(version, link)
    os.replace(link, published_dir / CURRENT)  # rename(2) over the old link: atomic for readers
    _fsync_dir(published_dir)


def write_snapshot(
    published_dir: Path, version: str, tables: RoutingTables, centers: np.ndarray, manifest: dict,
    extra_files: dict[str, bytes] | None = None,
) -> Path:
    """Write a complete snapshot folder and make it current (publishers that keep no store use this)."""
    path = write_folder(published_dir, version, {**table_files(tables, centers), **(extra_files or {})}, manifest)
    make_current(published_dir, version)
    return path


def read_snapshot(path: Path) -> Snapshot:
    """Read a published folder and verify its checksum against the manifest."""
    import pandas as pd

    manifest_path = path / "manifest.json"
    if not manifest_path.exists():
        raise PublishError(f"{path} has no manifest.json: not a complete snapshot")
    try:
        manifest = json.loads(manifest_path.read_text())
        files = {name: (path / name).read_bytes() for name in manifest["files"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a file gone, a manifest cut or edited by hand
        raise PublishError(f"{path} cannot be read as a snapshot ({type(exc).__name__}: {exc})") from None
    actual = checksum_of(files)
    if actual != manifest["checksum"]:
        raise PublishError(f"checksum mismatch in {path}: manifest {manifest['checksum']}, files {actual}")
    return Snapshot(
        path=path,
        manifest=manifest,
        routes=pd.read_parquet(io.BytesIO(files["routes.parquet"])),
        budgets=pd.read_parquet(io.BytesIO(files["budgets.parquet"])),
        files=files,
    )


def current_version(published_dir: Path) -> str | None:
    """The version `current` points at, or None when nothing is published."""
    link = Path(published_dir) / CURRENT
    return os.readlink(link) if link.is_symlink() else None


def read_current(published_dir: Path) -> Snapshot:
    """The snapshot `current` points at; the link is resolved once so every file comes from one version."""
    current = Path(published_dir) / CURRENT
    if not current.exists():
        raise PublishError(f"nothing published yet under {published_dir}: run `uniroute publish`")
    return read_snapshot(Path(os.path.realpath(current)))


def current_manifest(published_dir: Path) -> dict | None:
    """The manifest of the current snapshot, or None when nothing is published."""
    try:
        return read_current(published_dir).manifest
    except PublishError:
        return None


def stray_entries(published_dir: Path, versions: set[str]) -> list[Path]:
    """Entries under published/ that no publication accounts for: folders of versions the store does not
    record (a publisher killed before its commit), staging folders and leftover temporary links."""
    if not published_dir.exists():
        return []
    out = []
    for path in sorted(published_dir.iterdir()):
        if path.name == CURRENT:
            continue
        if path.name.startswith((STAGING_PREFIX, LINK_PREFIX)) or (path.is_dir() and path.name not in versions):
            out.append(path)
    return out


def remove_entry(path: Path) -> None:
    """Delete a stray snapshot folder or link."""
    if path.is_symlink() or path.is_file():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)
    log.info("removed %s", path)


def new_version(fp: str) -> str:
    """A sortable version name: UTC time to the microsecond plus the fingerprint."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-{fp[:8]}"
