"""The champion without opening the store: what lets a one-prompt `uniroute route` start in a fraction of a second.

Reading the champion through DuckDB costs a cold process most of a second (DuckDB, pandas and Arrow imported, the
router version and the pool queried). Two small files stand in for that read when they can prove they say what
the store would:

- `serving.json` in each published snapshot (written by publish): the default setting of the snapshot's router
  and pool, worked out once at publish time, and the sha256 of the router and embedder files it names;
- `cache/serving-state.json` (written by every `uniroute route` that did read the store): what that read found
  (champion, active pool, retired models, the publication of the champion, its prices), keyed by the store
  file's identity (inode, size, modification time of the file and its WAL). Any write to the store changes
  the key, so the next route reads the store again and writes a new one.

`quick_source` answers only when the key matches the store as it is now, no writer holds the store, and the
current snapshot is of the champion the state names with the same pool; anything else (nothing published, a
snapshot from before serving.json, a build not yet published, a file damaged) returns None and the caller reads
the store as before. The decision itself is the store path's own (route.decided_columns): this module only finds
the router and its setting.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniroute.errors import UnirouteError
from uniroute.pipeline.serving.route import DEFAULT_SETTING, ResolvedSetting, RoutingSource
from uniroute.pipeline.serving.snapshot import CURRENT, EMBEDDER_FILE, ROUTER_FILE

SERVING_FILE = "serving.json"
SERVING_FORMAT = 1
STATE_FILE = "serving-state.json"
# A store file modified this recently is not trusted as a key: a write within the file system's timestamp
# granularity (a few milliseconds) could leave size and time unchanged (git's "racily clean" index entries).
SETTLED_SECONDS = 1.0


def serving_file(router: Any, pool: tuple[str, ...], files: dict[str, bytes]) -> bytes:
    """serving.json of a snapshot whose files are `files`: the default setting of router and pool (the one
    `uniroute route` without --budget or --lambda routes at, routers.tables.default_budget) and the sha256 of
    the router and embedder files."""
    from uniroute.routers.tables import default_budget

    budget, lam, _, _ = default_budget(router, pool)
    digests = {name: hashlib.sha256(files[name]).hexdigest() for name in (ROUTER_FILE, EMBEDDER_FILE) if name in files}
    return json.dumps({"format": SERVING_FORMAT, "pool": list(pool), "default_setting": {"budget": float(budget),
                                                                                         "lam": float(lam)},
                       "sha256": digests}, indent=1).encode()


def store_key(db_path: Path) -> list[Any] | None:
    """The store file's identity as it is now (inode, size and modification time of the file and of its WAL);
    None when the store is missing or was modified too recently to be told apart from a write to come."""
    key: list[Any] = []
    now = time.time_ns()
    for path in (Path(db_path), Path(f"{db_path}.wal")):
        try:
            st = path.stat()
        except FileNotFoundError:
            if not key:
                return None
            key.append(None)
            continue
        if now - st.st_mtime_ns < SETTLED_SECONDS * 1e9:
            return None
        key.append([st.st_ino, st.st_size, st.st_mtime_ns])
    return key


def remember_store_answer(cache_dir: Path, key_before: list[Any] | None, db_path: Path,
                          source: RoutingSource) -> None:
    """Keep what a read of the store found (source: the champion, read between key_before and now) for the next
    route's quick_source, unless the store changed during the read. Best effort: a home that cannot be written
    only loses the shortcut."""
    if key_before is None or store_key(db_path) != key_before:
        return
    state = {"store": key_before, "router_id": source.router_id, "pool": list(source.pool),
             "retired": sorted(source.retired), "publication_version": source.publication_version,
             "price_snapshot": source.price_snapshot, "source": source.source}
    path = Path(cache_dir) / STATE_FILE
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{STATE_FILE}.")
        with os.fdopen(handle, "w") as out:
            json.dump(state, out)
        os.replace(tmp, path)


@dataclass(frozen=True)
class QuickSource:
    """The champion as the store would give it, and its default setting."""

    source: RoutingSource
    default: ResolvedSetting  # what route.resolved_setting gives for a request naming no setting


def quick_source(db_path: Path, published_dir: Path, cache_dir: Path) -> QuickSource | None:
    """The champion and its pool from the current snapshot when serving-state.json proves the store would answer
    with them (see the module's docstring); None to read the store."""
    try:
        state = json.loads((Path(cache_dir) / STATE_FILE).read_text())
        if state["store"] != store_key(db_path) or _writer_holds(db_path):
            return None
        folder = Path(os.path.realpath(Path(published_dir) / CURRENT))
        manifest = json.loads((folder / "manifest.json").read_text())
        if SERVING_FILE not in manifest["files"] or manifest["router_id"] != state["router_id"]:
            return None
        serving = json.loads((folder / SERVING_FILE).read_text())
        if serving["format"] != SERVING_FORMAT or serving["pool"] != state["pool"]:
            return None
        router_bytes = _checked(folder / ROUTER_FILE, serving["sha256"][ROUTER_FILE])
        from uniroute.embed.portable import embedder_from_state, restored_embedder
        from uniroute.routers.serialize import router_from_bytes

        router = router_from_bytes(router_bytes)
        embedder = restored_embedder(router.embedder_id, cache_dir)
        if embedder is None and EMBEDDER_FILE in serving["sha256"]:
            embedder = embedder_from_state(_checked(folder / EMBEDDER_FILE, serving["sha256"][EMBEDDER_FILE]),
                                           cache_dir)
        if embedder is None:  # an embedder built by name: the store path knows how (pipeline.pool.registry)
            return None
        default = serving["default_setting"]
        source = RoutingSource(router, state["router_id"], tuple(state["pool"]), frozenset(state["retired"]), None,
                               state["source"], state["publication_version"], state["price_snapshot"], embedder)
        return QuickSource(source, (float(default["lam"]), float(default["budget"]), DEFAULT_SETTING, None))
    except (OSError, ValueError, KeyError, TypeError, UnirouteError):  # missing, damaged, unexpected: read the store
        return None


def _checked(path: Path, sha256: str) -> bytes:
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"{path} does not match its sha256 in {SERVING_FILE}")
    return data


def _writer_holds(db_path: Path) -> bool:
    """Whether a writer holds the store's lock now (store.lock.current_holder's probe, without importing the store:
    a held store answers from the snapshot on the store path, and says so)."""
    path = Path(f"{db_path}.lock")
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
