"""A fitted router of any kind as bytes and back, without pickle: a NumPy .npz of plain arrays plus a JSON header.

Pickled routers were code that ran at load time (anyone who could write the store, an MLflow artifact or a
published snapshot could run code in the next process that loaded it) and broke whenever a class moved. An npz
read with `allow_pickle=False` holds only numbers and strings. The header names the format version, the
router's structure (`kind`), its models and its scalars; each kind registers how it turns into arrays.

Layout (version 2): `header` (a JSON string), `costs` (M,), and per kind
- kmeans / learnedmap: `psi` (M, K), optionally `psi_counts` (M, K) and `reference` (n, d), and the cluster map's
  arrays under `map.` (`map.centers` (K, d) for K-means; `map.w1` ... `map.b3` and optionally `map.centers` for
  the LearnedMap's K-means clusters); the header carries `shrinkage`;
- knn: `labels` (M, n_ref), `refs` (n_ref, d), `ref_ids` (n_ref,) unicode; the header carries `neighbours`.
Version 1 files (K-means and LearnedMap routers, header key `map`) are still read.
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np

from uniroute.errors import UnirouteError
from uniroute.routers.kmeans import Centroids
from uniroute.routers.knn import KnnRouter
from uniroute.routers.learned_map import LAYERS, LearnedMap
from uniroute.routers.router import Router

FORMAT = "uniroute-router"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
MAP_PREFIX = "map."
KINDS = ("kmeans", "learnedmap", "knn")

AnyRouter = Router | KnnRouter


class RouterFormatError(UnirouteError, ValueError):
    """Bytes that are not a router this version can read; the message says what is wrong."""


def router_kind(router: AnyRouter) -> str:
    """The structural kind written in the header: "kmeans", "learnedmap" or "knn"."""
    if isinstance(router, KnnRouter):
        return "knn"
    if isinstance(router, Router) and isinstance(router.assigner, Centroids):
        return "kmeans"
    if isinstance(router, Router) and isinstance(router.assigner, LearnedMap):
        return "learnedmap"
    raise RouterFormatError(f"no serialisation for a router of type {type(router).__name__}")


def _arrays_of(router: AnyRouter, kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(header fields, arrays) of a router of the given kind."""
    if kind == "knn":
        return {"neighbours": router.neighbours}, {
            "labels": router.labels, "refs": router.refs, "ref_ids": np.array(router.ref_ids, dtype=str)
        }
    arrays = {"psi": router.psi}
    if router.psi_counts is not None:
        arrays["psi_counts"] = router.psi_counts
    if router.reference is not None:
        arrays["reference"] = router.reference
    lmap = router.assigner
    if kind == "kmeans":
        arrays[MAP_PREFIX + "centers"] = lmap.centers
    else:
        arrays.update({MAP_PREFIX + name: getattr(lmap, name) for name in LAYERS})
        if lmap.clusters is not None:
            arrays[MAP_PREFIX + "centers"] = lmap.clusters.centers
    return {"shrinkage": router.shrinkage}, arrays


def router_to_bytes(router: AnyRouter) -> bytes:
    """The router as npz bytes (no pickled objects)."""
    kind = router_kind(router)
    fields, arrays = _arrays_of(router, kind)
    header = {"format": FORMAT, "version": FORMAT_VERSION, "kind": kind, "embedder_id": router.embedder_id,
              "models": list(router.models), **fields}
    buffer = io.BytesIO()
    np.savez(buffer, header=np.array(json.dumps(header)), costs=router.costs, **arrays)
    return buffer.getvalue()


def _router_from(kind: str, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> AnyRouter:
    common = {"embedder_id": str(header["embedder_id"]), "models": tuple(str(m) for m in header["models"]),
              "costs": arrays["costs"]}
    if kind == "knn":
        return KnnRouter(**common, labels=arrays["labels"], refs=arrays["refs"],
                         ref_ids=tuple(str(i) for i in arrays["ref_ids"]), neighbours=int(header["neighbours"]))
    maps = {name[len(MAP_PREFIX):]: value for name, value in arrays.items() if name.startswith(MAP_PREFIX)}
    if kind == "kmeans":
        assigner: Centroids | LearnedMap = Centroids(maps["centers"])
    else:
        clusters = Centroids(maps["centers"]) if "centers" in maps else None
        assigner = LearnedMap(**{name: maps[name] for name in LAYERS}, clusters=clusters)
    return Router(**common, psi=arrays["psi"], assigner=assigner, psi_counts=arrays.get("psi_counts"),
                  shrinkage=float(header.get("shrinkage", 0.0)), reference=arrays.get("reference"))


def router_from_bytes(data: bytes) -> AnyRouter:
    """The router written by router_to_bytes (this version or version 1); RouterFormatError for anything else."""
    try:
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as saved:
            arrays = {name: saved[name] for name in saved.files}
    except (ValueError, OSError, EOFError) as exc:
        raise RouterFormatError(f"not a router file (expected npz without pickled objects): {exc}") from exc
    try:
        header = json.loads(str(arrays.pop("header")))
    except (KeyError, json.JSONDecodeError) as exc:
        raise RouterFormatError("router file has no readable header") from exc
    if header.get("format") != FORMAT or header.get("version") not in READABLE_VERSIONS:
        raise RouterFormatError(
            f"router file is {header.get('format')!r} version {header.get('version')!r}; "
            f"this uniroute reads {FORMAT!r} versions {list(READABLE_VERSIONS)}"
        )
    kind = header.get("kind", header.get("map"))  # version 1 named the cluster map `map`
    if kind not in KINDS:
        raise RouterFormatError(f"router file has an unknown kind {kind!r} (known: {list(KINDS)})")
    try:
        return _router_from(kind, header, arrays)
    except KeyError as exc:
        raise RouterFormatError(f"{kind} router file lacks {exc}") from exc
