"""Model files an embedder builds once, offline, into a cache folder: safe under concurrency and interruption.

`make env` builds the default ones once for the whole environment (`deployments/embedder_files.py`, into
ENVIRONMENT_FOLDER): a home whose own cache lacks one copies the environment's, built from the same recipe, instead
of building it (the static table's distillation is about half a minute of one core, and it was paid by every new
home: `make run`'s first story, a new user's first `route`). A copy, not a reference: the home stays whole on its
own (moved, backed up, or shared with Dask workers whose environment is elsewhere).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniroute.environment import ENVIRONMENT_FOLDER

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
# How long a process waits for another one building the same artifact before giving up.
LOCK_TIMEOUT_SECONDS = 1800.0


@dataclass(frozen=True)
class Artifact:
    """A built model folder and the sha256 prefix of the files in it (part of the embedder id)."""

    path: Path
    fingerprint: str
    recipe: dict[str, Any]
    # The files the build wrote (a reader may add its own beside them, as the static table's memory-map copy); empty
    # in a manifest written before they were listed.
    files: tuple[str, ...] = ()


def recipe_key(recipe: dict[str, Any]) -> str:
    """A short hash of everything that goes into a build (source model, settings, library versions)."""
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode("utf-8")).hexdigest()[:12]


def files_fingerprint(folder: Path) -> str:
    """sha256 prefix over the names and bytes of the files in folder (the manifest excluded), in name order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.name != MANIFEST):
        digest.update(path.name.encode("utf-8") + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:12]


def _read_manifest(folder: Path) -> Artifact | None:
    """The artifact in folder, or None if no complete build is there."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        return None
    return Artifact(folder, str(manifest["fingerprint"]), dict(manifest["recipe"]), tuple(manifest.get("files", ())))


def _environment_build(environment: Path | None, name: str) -> Artifact | None:
    """The environment's build of the artifact folder called name, if it has one that lists its files."""
    found = None if environment is None else _read_manifest(Path(environment) / "embedders" / name)
    return found if found is not None and found.files else None


def _copy_files(source: Artifact, folder: Path) -> None:
    """A build by copying: the files another build wrote (its fingerprint's bytes, nothing a reader added)."""
    for name in source.files:
        shutil.copyfile(source.path / name, folder / name)


def built_artifact(cache_dir: Path, name: str, recipe: dict[str, Any], build: Callable[[Path], None],
                   environment: Path | None = ENVIRONMENT_FOLDER) -> Artifact:
    """The artifact `name` built from `recipe` under cache_dir, building it first if it is not there.

    Found in cache_dir, it is that one. Else it is made in cache_dir: copied from `environment`'s build of the same
    recipe where there is one (the same bytes, so the same fingerprint and embedder id), built otherwise. A home keeps
    the file it built before the environment had one: its routers' embedder ids name that file's fingerprint.

    `build(folder)` writes the model files into an empty folder. It runs in a temporary folder beside the
    final one, which is renamed into place (atomic) only once the build and its manifest are complete, so a
    killed build leaves nothing a reader could take for finished. A file lock serialises builders: a second
    process waits for the first and then reuses its result; a temporary folder left by a killed builder is
    removed by the next one that holds the lock.
    """
    from filelock import FileLock

    root = Path(cache_dir) / "embedders"
    final = root / f"{name}-{recipe_key(recipe)}"
    found = _read_manifest(final)
    if found is not None:
        return found
    prebuilt = _environment_build(environment, final.name)
    if prebuilt is not None:
        build = functools.partial(_copy_files, prebuilt)
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock", timeout=LOCK_TIMEOUT_SECONDS):
        found = _read_manifest(final)  # another process may have built it while we waited
        if found is not None:
            return found
        for stale in [*root.glob(f"{final.name}.tmp-*"), *([final] if final.exists() else [])]:
            log.warning("removing %s, left by an interrupted build", stale)
            shutil.rmtree(stale)
        work = root / f"{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        work.mkdir()
        try:
            log.info("%s %s into %s (once; later runs reuse it)", "copying the environment's" if prebuilt else
                     "building", name, final)
            build(work)
            fingerprint = files_fingerprint(work)
            files = sorted(p.name for p in work.iterdir() if p.is_file())
            manifest = {"name": name, "recipe": recipe, "fingerprint": fingerprint, "files": files}
            (work / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            os.replace(work, final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    log.info("built %s: fingerprint %s", final, fingerprint)
    return Artifact(final, fingerprint, recipe, tuple(files))
