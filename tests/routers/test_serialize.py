"""Routers as bytes without pickle: exact round trips for every cluster map, and refusals of anything else."""

from __future__ import annotations

import io
import json
import pickle
from dataclasses import replace

import numpy as np
import pytest

from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.learned_map import LearnedMap
from uniroute.routers.knn.neighbours import KnnRouter
from uniroute.routers.router import Router
from uniroute.routers.serialize import RouterFormatError, router_from_bytes, router_to_bytes

RNG = np.random.default_rng(0)
PSI = np.array([[0.1, 0.9, 0.5], [0.5, 0.5, 0.2]])
COSTS = np.array([1.0, 2.5])


def _kmeans_router(counts: bool = True) -> Router:
    centers = RNG.normal(size=(3, 4)).astype(np.float32)
    return Router("emb:x", ("m-a", "m/b"), COSTS, PSI, Centroids(centers),
                  np.array([[3, 0, 1], [2, 2, 2]]) if counts else None)


def _learned_map_router(clusters: bool = False) -> Router:
    shapes = {"w1": (4, 5), "b1": (5,), "w2": (5, 5), "b2": (5,), "w3": (5, 3), "b3": (3,)}
    centroids = Centroids(RNG.normal(size=(3, 4)).astype(np.float32)) if clusters else None
    lmap = LearnedMap(**{name: RNG.normal(size=shape) for name, shape in shapes.items()}, clusters=centroids)
    reference = RNG.normal(size=(6, 4)) if clusters else None
    return Router("emb:x", ("m-a", "m/b"), COSTS, PSI, lmap, reference=reference)


def _shrunk_router() -> Router:
    return replace(_kmeans_router(), shrinkage=3.5)


def _knn_router() -> KnnRouter:
    labels = np.array([[0.0, 1.0, np.nan, 0.5], [1.0, 1.0, 0.0, 0.0]])
    return KnnRouter("emb:x", ("m-a", "m/b"), COSTS, labels, RNG.normal(size=(4, 4)), ("p1", "p2", "é3", "p4"), 2)


@pytest.mark.parametrize("make", [_kmeans_router, lambda: _kmeans_router(counts=False), _learned_map_router,
                                  lambda: _learned_map_router(clusters=True), _shrunk_router, _knn_router])
def test_round_trip_routes_identically(make) -> None:
    router = make()
    back = router_from_bytes(router_to_bytes(router))
    X = RNG.normal(size=(50, 4)).astype(np.float32)
    assert type(back) is type(router) and back.kind == router.kind
    assert back.models == router.models and back.embedder_id == router.embedder_id
    np.testing.assert_array_equal(back.costs, router.costs)
    for name in ("psi", "psi_counts", "reference", "labels", "refs", "ref_ids", "neighbours", "shrinkage"):
        a, b = getattr(router, name, None), getattr(back, name, None)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=name)
    for lam in (0.0, 0.1, 10.0):
        np.testing.assert_array_equal(back.route(X, lam), router.route(X, lam))


def test_version_1_files_are_still_read() -> None:
    router = _kmeans_router()
    buffer = io.BytesIO()
    header = {"format": "uniroute-router", "version": 1, "map": "kmeans", "embedder_id": "emb:x",
              "models": list(router.models)}
    np.savez(buffer, header=np.array(json.dumps(header)), costs=router.costs, psi=router.psi,
             psi_counts=router.psi_counts, **{"map.centers": router.assigner.centers})
    back = router_from_bytes(buffer.getvalue())
    np.testing.assert_array_equal(back.assigner.centers, router.assigner.centers)
    assert back.kind == "kmeans" and back.shrinkage == 0.0


def test_a_pickle_is_refused_not_loaded() -> None:
    with pytest.raises(RouterFormatError, match="not a router file"):
        router_from_bytes(pickle.dumps(_kmeans_router()))


def test_another_format_version_is_refused() -> None:
    buffer = io.BytesIO()
    np.savez(buffer, header=np.array(json.dumps({"format": "uniroute-router", "version": 99})))
    with pytest.raises(RouterFormatError, match="version 99"):
        router_from_bytes(buffer.getvalue())


def _header(data: bytes) -> dict:
    with np.load(io.BytesIO(data), allow_pickle=False) as saved:
        return json.loads(str(saved["header"]))


@pytest.mark.parametrize("make", [_kmeans_router, _learned_map_router, _shrunk_router, _knn_router])
def test_the_header_names_the_registered_kind(make) -> None:
    router = make()
    assert _header(router_to_bytes(router))["kind"] == router.kind


def test_version_2_files_naming_the_structure_are_still_read() -> None:
    """Version 2 wrote "kmeans" for a count-aware K-means router too; its shrinkage makes it one again."""
    router = _shrunk_router()
    saved = dict(np.load(io.BytesIO(router_to_bytes(router)), allow_pickle=False))
    header = {**json.loads(str(saved.pop("header"))), "version": 2, "kind": "kmeans"}
    buffer = io.BytesIO()
    np.savez(buffer, header=np.array(json.dumps(header)), **saved)
    back = router_from_bytes(buffer.getvalue())
    assert back.kind == "kmeans_shrunk" and back.shrinkage == router.shrinkage
    np.testing.assert_array_equal(back.routing_psi, router.routing_psi)
