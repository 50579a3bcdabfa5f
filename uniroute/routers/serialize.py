"""A fitted router as bytes and back, without pickle: a NumPy .npz of plain arrays plus a JSON header.

Pickled routers were code that ran at load time (anyone who could write the store, an MLflow artifact or a
published snapshot could run code in the next process that loaded it) and broke whenever a class moved. An npz
read with `allow_pickle=False` holds only numbers and strings. The header names the format version, the
router's kind of cluster map and its models; every kind of map registers how to turn itself into arrays.

Layout: `header` (a JSON string), `costs` (M,), `psi` (M, K), optionally `psi_counts` (M, K), and the map's
own arrays under the prefix `map.` (e.g. `map.centers` (K, d) for K-means).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from uniroute.routers.kmeans import Centroids
from uniroute.routers.learned_map import LearnedMap
from uniroute.routers.router import Router

FORMAT = "uniroute-router"
FORMAT_VERSION = 1
MAP_PREFIX = "map."


class RouterFormatError(ValueError):
    """Bytes that are not a router this version can read; the message says what is wrong."""


# Each kind of cluster map: (its type, name in the header, arrays of a fitted map, a map from those arrays).
MAP_KINDS: dict[str, tuple[type, Callable[[Any], dict[str, np.ndarray]], Callable[[dict[str, np.ndarray]], Any]]] = {
    "kmeans": (Centroids, lambda m: {"centers": m.centers}, lambda a: Centroids(a["centers"])),
    "learnedmap": (
        LearnedMap,
        lambda m: {name: getattr(m, name) for name in ("w1", "b1", "w2", "b2", "w3", "b3")},
        lambda a: LearnedMap(**{name: a[name] for name in ("w1", "b1", "w2", "b2", "w3", "b3")}),
    ),
}


def map_kind(router: Router) -> str:
    """The header name of a router's cluster map ("kmeans", "learnedmap")."""
    for name, (cls, _, _) in MAP_KINDS.items():
        if isinstance(router.assigner, cls):
            return name
    raise RouterFormatError(f"no serialisation for a cluster map of type {type(router.assigner).__name__}")


def router_to_bytes(router: Router) -> bytes:
    """The router as npz bytes (no pickled objects)."""
    kind = map_kind(router)
    header = {"format": FORMAT, "version": FORMAT_VERSION, "map": kind, "embedder_id": router.embedder_id,
              "models": list(router.models)}
    arrays = {"header": np.array(json.dumps(header)), "costs": router.costs, "psi": router.psi}
    if router.psi_counts is not None:
        arrays["psi_counts"] = router.psi_counts
    arrays.update({MAP_PREFIX + name: value for name, value in MAP_KINDS[kind][1](router.assigner).items()})
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def router_from_bytes(data: bytes) -> Router:
    """The router written by router_to_bytes; RouterFormatError for anything else."""
    try:
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as saved:
            arrays = {name: saved[name] for name in saved.files}
    except (ValueError, OSError, EOFError) as exc:
        raise RouterFormatError(f"not a router file (expected npz without pickled objects): {exc}") from exc
    try:
        header = json.loads(str(arrays.pop("header")))
    except (KeyError, json.JSONDecodeError) as exc:
        raise RouterFormatError("router file has no readable header") from exc
    if header.get("format") != FORMAT or header.get("version") != FORMAT_VERSION:
        raise RouterFormatError(
            f"router file is {header.get('format')!r} version {header.get('version')!r}; "
            f"this uniroute reads {FORMAT!r} version {FORMAT_VERSION}"
        )
    kind = header.get("map")
    if kind not in MAP_KINDS:
        raise RouterFormatError(f"router file has an unknown cluster map {kind!r} (known: {sorted(MAP_KINDS)})")
    map_arrays = {name[len(MAP_PREFIX):]: value for name, value in arrays.items() if name.startswith(MAP_PREFIX)}
    return Router(
        embedder_id=str(header["embedder_id"]),
        models=tuple(str(m) for m in header["models"]),
        costs=arrays["costs"],
        psi=arrays["psi"],
        assigner=MAP_KINDS[kind][2](map_arrays),
        psi_counts=arrays.get("psi_counts"),
    )
