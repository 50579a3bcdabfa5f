"""The hierarchy router (kind `kmeans_hier`): each fine cell routes by the mean of itself and its groups' cells, a
group's cell being the count-weighted mean of its fine cells; a model's row stays its fine per-cluster mean, so
onboarding, the evidence gate, the cost cap and storage are those of one clustering. The pipeline surfaces (build,
publish, route, explain, onboard, retire, published tables, pyfunc) run for this kind in
tests/pipeline/build/test_router_kinds.py, which every registered kind parametrises."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from uniroute.experiments.methods import DEFAULT_METHODS, METHODS
from uniroute.pipeline.build.tuned_kinds import checked_kinds
from uniroute.pipeline.pool.evidence_gate import GateThresholds, gate_model
from uniroute.routers.budgets.cost_cap import lambda_for_max_cost
from uniroute.routers.cluster.hierarchy import group_sizes
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.psi import shrunk_values
from uniroute.routers.kinds import default_kind, kind_names
from uniroute.routers.router import Router
from uniroute.routers.serialize import RouterFormatError, router_from_bytes, router_to_bytes

RNG = np.random.default_rng(4)
# Eight fine clusters on a line, grouped in pairs (4 groups) and in fours (2 groups) by the coarser centres.
FINE = np.array([[x, 0.0] for x in range(8)], dtype=np.float32)
QUARTERS = np.array([[0.5, 0.0], [2.5, 0.0], [4.5, 0.0], [6.5, 0.0]], dtype=np.float32)
HALVES = np.array([[1.5, 0.0], [5.5, 0.0]], dtype=np.float32)
PSI = RNG.uniform(0.1, 0.9, (3, 8))
COUNTS = RNG.integers(0, 30, (3, 8))
COSTS = np.array([1.0, 3.0, 9.0])


def _router(shrinkage: float = 5.0) -> Router:
    return Router("emb:x", ("a", "b", "c"), COSTS, np.where(COUNTS > 0, PSI, 0.5), Centroids(FINE), COUNTS,
                  shrinkage=shrinkage, groups=(Centroids(QUARTERS), Centroids(HALVES)))


def _by_hand(values: np.ndarray, counts: np.ndarray, s: float) -> np.ndarray:
    """The hierarchy's table written out: fine cells, pairs and fours, each shrunk, averaged."""
    levels = [shrunk_values(values, counts, s)]
    for size in (2, 4):
        sums = (np.where(counts > 0, values, 0) * counts).reshape(len(values), -1, size).sum(axis=2)
        n = counts.reshape(len(values), -1, size).sum(axis=2)
        group = shrunk_values(np.where(n > 0, sums / np.maximum(n, 1), 0), n, s)
        levels.append(np.repeat(group, size, axis=1))
    return np.mean(levels, axis=0)


@pytest.mark.parametrize("s", [0.0, 5.0])
def test_each_cell_routes_by_the_mean_of_itself_and_its_count_weighted_groups(s):
    router = _router(s)
    assert router.kind == "kmeans_hier" and router.k == 8
    np.testing.assert_allclose(router.routing_psi, _by_hand(router.psi, COUNTS, s))
    # Not count-aware K-means' table: the groups move it.
    assert not np.allclose(router.routing_psi, shrunk_values(router.psi, COUNTS, s))


def test_the_coarser_levels_are_half_and_a_quarter_of_the_fine_clusters():
    assert group_sizes(16) == (8, 4) and group_sizes(2) == (1,) and group_sizes(1) == (1,)


def test_round_trip_keeps_the_groups_and_routes_identically():
    router = _router()
    back = router_from_bytes(router_to_bytes(router))
    assert back.kind == "kmeans_hier" and len(back.groups) == 2
    for a, b in zip(router.groups, back.groups, strict=True):
        np.testing.assert_array_equal(a.centers, b.centers)
    np.testing.assert_array_equal(back.routing_psi, router.routing_psi)
    X = RNG.normal(3.5, 3, (200, 2)).astype(np.float32)
    for lam in (0.0, 0.02, 0.2):
        np.testing.assert_array_equal(back.route(X, lam), router.route(X, lam))


def test_a_stored_hierarchy_without_its_groups_is_refused():
    import io

    blob = router_to_bytes(_router())
    with np.load(io.BytesIO(blob), allow_pickle=False) as saved:
        arrays = {n: saved[n] for n in saved.files if not n.startswith("groups.")}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    with pytest.raises(RouterFormatError, match="groups.0"):
        router_from_bytes(buffer.getvalue())


def test_an_onboarded_row_is_its_fine_mean_and_moves_its_group_cells():
    router = _router()
    row, counts = np.linspace(0.2, 0.6, 8), np.array([4, 0, 6, 1, 9, 2, 0, 5])
    joined = router.with_model("d", row, 2.0, counts)
    assert joined.kind == "kmeans_hier" and joined.groups == router.groups
    np.testing.assert_array_equal(joined.psi[-1], row)  # stored as measured on the one fine clustering
    np.testing.assert_array_equal(joined.psi_counts[-1], counts)
    # Its group cells (and the pool prior every row shrinks toward) are derived from the new table.
    np.testing.assert_allclose(joined.routing_psi,
                               _by_hand(np.vstack([router.psi, row]), np.vstack([COUNTS, counts]), 5.0))
    assert joined.without_model("d").groups == router.groups


def test_the_evidence_gate_floors_the_hierarchy_table():
    router = _router().with_model("d", np.full(8, 0.01), 0.5, np.array([1, 1, 1, 1, 1, 1, 1, 1]))
    gate = gate_model(router, "d", router.models, GateThresholds())
    assert gate.provisional  # a cheap model that wins on one answer per cluster is held to its bound
    gated = router.with_floor("d", gate.floor)
    i = gated.models.index("d")
    np.testing.assert_allclose(gated.routing_psi[i], np.maximum(router.routing_psi[i], gate.floor))


def test_the_cost_cap_is_met_on_the_hierarchy_table():
    router = _router()
    X = RNG.normal(3.5, 3, (300, 2)).astype(np.float32)
    lam = lambda_for_max_cost(router, X, 4.0)
    assert COSTS[router.route(X, lam)].mean() <= 4.0 + 1e-12


def test_a_refit_of_the_fine_clusters_regroups_them_by_the_stored_coarser_centres():
    router = _router()
    moved = replace(router, assigner=Centroids(FINE[::-1].copy()))  # full_scale's refit: new fine centres
    flipped = replace(router, psi=router.psi[:, ::-1], psi_counts=COUNTS[:, ::-1])
    np.testing.assert_allclose(replace(moved, psi=flipped.psi, psi_counts=flipped.psi_counts).routing_psi[:, ::-1],
                               router.routing_psi)


def test_the_hierarchy_is_the_default_kind_and_a_default_candidate():
    """`auto` serves it unless another kind beats it clearly; a build fits it and an evaluation runs it unless told
    otherwise (decision 0006)."""
    assert default_kind() == "kmeans_hier" and "kmeans_hier" in kind_names()
    assert "kmeans_hier" in checked_kinds(None) and checked_kinds(["kmeans_hier"]) == ("kmeans_hier",)
    assert "kmeans_hier" in METHODS and "kmeans_hier" in DEFAULT_METHODS


def test_a_hierarchy_needs_counts_and_clusters_of_its_dimension():
    with pytest.raises(ValueError, match="psi_counts"):
        Router("e", ("a",), np.ones(1), np.full((1, 8), 0.5), Centroids(FINE), groups=(Centroids(HALVES),))
    with pytest.raises(ValueError, match="dimension"):
        replace(_router(), groups=(Centroids(np.zeros((2, 3), dtype=np.float32)),))
