"""A fitted router of any kind as bytes and back, without pickle: a NumPy .npz of plain arrays plus a JSON header.

Pickled routers were code that ran at load time (anyone who could write the store, an MLflow artifact or a
published snapshot could run code in the next process that loaded it) and broke whenever a class moved. An npz
read with `allow_pickle=False` holds only numbers and strings. The header names the format version, the
router's kind (`kind`, a registered name: routers.kinds), its models and its scalars; the kind turns its router
into arrays and back (RouterKind.router_arrays / router_from_arrays).

Layout (version 3): `header` (a JSON string), `costs` (M,), and the kind's arrays, e.g.
- kmeans / kmeans_shrunk / learnedmap: `psi` (M, K), optionally `psi_counts` (M, K), `psi_floor` (M, K),
  `cost_scale` (M, K: per-cluster model costs, routers.cluster.cluster_costs; absent in older files) and `reference`
  (n, d), and the cluster map's arrays under `map.` (`map.centers` (K, d) for K-means; `map.w1` ... `map.b3`
  and optionally `map.centers` for the LearnedMap's K-means clusters); the header carries `shrinkage`;
- knn: `labels` (M, n_ref), `refs` (n_ref, d), `ref_ids` (n_ref,) unicode; the header carries `neighbours`.
Version 2 wrote the same arrays with the structural kind ("kmeans" for count-aware K-means too); version 1 files
(K-means and LearnedMap routers, header key `map`) are still read.
"""

from __future__ import annotations

import io
import json

import numpy as np

from uniroute.errors import UnirouteError
from uniroute.routers.kinds import kind_names, router_kind
from uniroute.routers.rule import RoutingRule

FORMAT = "uniroute-router"
FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)

AnyRouter = RoutingRule  # a router of any registered kind


class RouterFormatError(UnirouteError, ValueError):
    """Bytes that are not a router this version can read; the message says what is wrong."""


def router_to_bytes(router: AnyRouter) -> bytes:
    """The router as npz bytes (no pickled objects)."""
    try:
        kind = router_kind(router.kind)
    except (AttributeError, ValueError) as exc:
        raise RouterFormatError(f"no serialisation for a router of type {type(router).__name__}: {exc}") from exc
    fields, arrays = kind.router_arrays(router)
    header = {"format": FORMAT, "version": FORMAT_VERSION, "kind": kind.name, "embedder_id": router.embedder_id,
              "models": list(router.models), **fields}
    buffer = io.BytesIO()
    # numpy's stub reads **arrays as if it could hold allow_pickle; the kinds name only arrays.
    np.savez(buffer, header=np.array(json.dumps(header)), costs=router.costs, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def router_from_bytes(data: bytes) -> AnyRouter:
    """The router written by router_to_bytes (versions 1 to 3); RouterFormatError for anything else."""
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
    if kind not in kind_names():
        raise RouterFormatError(f"router file has an unknown kind {kind!r} (known: {list(kind_names())})")
    try:
        return router_kind(kind).router_from_arrays(header, arrays)
    except KeyError as exc:
        raise RouterFormatError(f"{kind} router file lacks {exc}") from exc
