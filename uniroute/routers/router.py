"""The cluster router: gamma(x, m) = Phi(x) . Psi(m) (paper eq. 8) in the rule of `rule` (paper eq. 5).

Phi is the assigner's (n, K) cluster membership (one-hot nearest centroid for K-means, the LearnedMap's
softmax); Psi is (M, K), each model's mean validation loss per cluster with the number of labelled prompts
behind each cell. A router may shrink its cells toward the pool prior (psi.pool_prior: the pool's loss in the
cluster weighed against the model's overall loss by its evidence) by `shrinkage` pseudo-prompts (count-aware
Psi, psi.shrunk_values): routing uses the shrunk cells (`routing_psi`), while `psi` keeps what validation
measured, so a new model's measured row is shrunk the same way when it joins. With counts, an empty cell routes
by the pool prior in every kind: a row measured alone (onboarding) filled its empty cells with its own mean,
which the pool never saw.
Shapes: X (n, d) float32, costs (M,).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

import numpy as np

from uniroute.routers.budgets.lambda_path import argmin_cheapest
from uniroute.routers.cluster.cluster_costs import cost_scale
from uniroute.routers.cluster.hierarchy import group_map, hierarchy_psi
from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of
from uniroute.routers.cluster.psi import cell_frame, psi_from_losses, shrunk_values, wilson_bounds
from uniroute.routers.explain import RouteTerms
from uniroute.routers.rule import RoutingRule, check_lambda

if TYPE_CHECKING:  # pandas where a table is made: a router read from its file routes without it
    import pandas as pd

    from uniroute.routers.cluster.learned_map import LearnedMap

log = logging.getLogger(__name__)


def _frozen_copy(a: np.ndarray, dtype: type) -> np.ndarray:
    out: np.ndarray = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class Router(RoutingRule):
    """A fitted cluster router over a named pool of models; routing is a pure function of it."""

    embedder_id: str
    models: tuple[str, ...]
    costs: np.ndarray  # (M,) cost per query of each model
    psi: np.ndarray  # (M, K) per-cluster mean loss as measured
    assigner: Centroids | LearnedMap
    psi_counts: np.ndarray | None = None  # (M, K) labelled prompts behind each Psi cell
    shrinkage: float = 0.0  # pseudo-prompts of the pool prior added to every cell (needs psi_counts)
    reference: np.ndarray | None = None  # (n, d) validation prompts for budgets (soft maps; one-hot derive theirs)
    # (M, K) the evidence gate's floor (pipeline/pool/evidence_gate.py): a cell > 0 is provisional, routed by
    # max(its cell, this bound: the upper end of its error's interval), so a model that would win a cluster on
    # too few answers takes its traffic only where even its pessimistic error wins. 0: not gated. None: no gate.
    psi_floor: np.ndarray | None = None
    # (M, K) each model's mean cost on a cluster's prompts over its mean cost (routers.cluster.cluster_costs): what a
    # cost cap checks its expected mean cost on. None (routers stored before it): the model's one cost everywhere.
    cost_scale: np.ndarray | None = None
    # The hierarchy's coarser clusterings (routers.cluster.hierarchy), finest first: each cell routes by the mean of
    # itself and its group cell at each level. Empty: the plain per-cluster table.
    groups: tuple[Centroids, ...] = ()

    def __post_init__(self) -> None:
        models = tuple(str(m) for m in self.models)
        costs = _frozen_copy(self.costs, np.float64)
        psi = _frozen_copy(self.psi, np.float64)
        m, k = len(models), self.assigner.k
        if m == 0:
            raise ValueError("a Router needs at least one model")
        if len(set(models)) != m:
            dupes = sorted({x for x in models if models.count(x) > 1})
            raise ValueError(f"duplicate model names in the router: {dupes}")
        if costs.shape != (m,):
            raise ValueError(f"costs has shape {costs.shape}, expected ({m},) for models {list(models)}")
        if psi.shape != (m, k):
            raise ValueError(f"psi has shape {psi.shape}, expected ({m}, {k}) (models x assigner clusters)")
        if not np.all(np.isfinite(costs)) or np.any(costs < 0):
            raise ValueError(f"costs must be finite and >= 0: {dict(zip(models, costs.tolist(), strict=True))}")
        if not np.all(np.isfinite(psi)):
            bad = [models[i] for i in np.unique(np.nonzero(~np.isfinite(psi))[0])]
            raise ValueError(f"psi has non-finite values for models {bad}")
        object.__setattr__(self, "models", models)
        object.__setattr__(self, "costs", costs)
        object.__setattr__(self, "psi", psi)
        object.__setattr__(self, "shrinkage", float(self.shrinkage))
        if self.psi_counts is not None:
            counts = _frozen_copy(self.psi_counts, np.int64)
            if counts.shape != (m, k):
                raise ValueError(f"psi_counts has shape {counts.shape}, expected ({m}, {k})")
            object.__setattr__(self, "psi_counts", counts)
        if not (np.isfinite(self.shrinkage) and self.shrinkage >= 0):
            raise ValueError(f"shrinkage must be finite and >= 0, got {self.shrinkage}")
        if self.shrinkage > 0 and self.psi_counts is None:
            raise ValueError("a router with shrinkage needs psi_counts (the evidence behind each cell)")
        # Recomputed from the whole pool, so a newcomer's empty cells take what the pool knows (not its own mean).
        routing = psi if self.psi_counts is None else _frozen_copy(
            shrunk_values(psi, self.psi_counts, self.shrinkage), np.float64
        )
        object.__setattr__(self, "groups", tuple(self.groups))
        if self.groups:
            if not isinstance(self.assigner, Centroids) or self.psi_counts is None:
                raise ValueError("a hierarchy needs a one-hot (K-means) router with psi_counts")
            if any(g.dim != self.assigner.dim for g in self.groups):
                raise ValueError(f"the hierarchy's group centres must have dimension {self.assigner.dim}")
            maps = [(group_map(self.assigner, g), g.k) for g in self.groups]
            routing = _frozen_copy(hierarchy_psi(psi, self.psi_counts, self.shrinkage, maps), np.float64)
        if self.psi_floor is not None:
            floor = _frozen_copy(self.psi_floor, np.float64)
            if floor.shape != (m, k) or not np.all(np.isfinite(floor)) or floor.min() < 0 or floor.max() > 1:
                raise ValueError(f"psi_floor must be ({m}, {k}) with values in [0, 1], got shape {floor.shape}")
            object.__setattr__(self, "psi_floor", floor)
            routing = _frozen_copy(np.maximum(routing, floor), np.float64)
        object.__setattr__(self, "_routing_psi", routing)
        if self.cost_scale is not None:
            scale = _frozen_copy(self.cost_scale, np.float64)
            if scale.shape != (m, k) or not np.all(np.isfinite(scale)) or scale.min() < 0:
                raise ValueError(f"cost_scale must be ({m}, {k}) finite and >= 0, got shape {scale.shape}")
            object.__setattr__(self, "cost_scale", scale)
        if self.reference is not None:
            ref = _frozen_copy(self.reference, np.float32)
            if ref.ndim != 2 or ref.shape[0] == 0 or ref.shape[1] != self.assigner.dim:
                raise ValueError(f"reference has shape {ref.shape}, expected (n >= 1, {self.assigner.dim})")
            object.__setattr__(self, "reference", ref)

    # ---- introspection -------------------------------------------------------------------------------
    @property
    def k(self) -> int:
        """Number of clusters K."""
        return int(self.psi.shape[1])

    @property
    def kind(self) -> str:
        """The router kind: "kmeans", "kmeans_shrunk" (count-aware Psi), "kmeans_hier" (count-aware Psi over a
        hierarchy) or "learnedmap"."""
        if not self.one_hot:
            return "learnedmap"
        if self.groups:
            return "kmeans_hier"
        return "kmeans" if self.shrinkage == 0 else "kmeans_shrunk"

    @property
    def one_hot(self) -> bool:
        """True when Phi is a hard nearest-centroid assignment (routing goes through a per-cluster table)."""
        return isinstance(self.assigner, Centroids)

    def psi_centroids(self) -> Centroids:
        """The K-means centroids behind its Psi (the LearnedMap's clusters too)."""
        return self.psi_clusters()

    def prompt_clusters(self, X: np.ndarray) -> np.ndarray:
        """(n,) each prompt's nearest centroid, or the LearnedMap's likeliest cluster."""
        if isinstance(self.assigner, Centroids):  # one_hot
            return self.assigner.assign(X)
        return self.assigner.membership(X).argmax(axis=1)

    def clustering_id(self) -> str:
        """The content id of the clusters its Psi rows are measured on."""
        return clustering_id_of(self.psi_clusters())

    def psi_table(self) -> pd.DataFrame:
        """Long table of Psi: model, cluster, loss (measured), n, routing_loss (what routing uses; shrunk for
        count-aware Psi), error_lo / error_hi (95% Wilson interval of the measured loss) and sparse (fewer than
        psi.SPARSE_CELL prompts behind the cell)."""
        import pandas as pd

        counts = self.psi_counts if self.psi_counts is not None else np.zeros_like(self.psi, dtype=np.int64)
        cells = cell_frame(self.models, self.psi, counts)
        return pd.DataFrame({
            "model": cells["model"], "cluster": cells["cluster"].astype(np.int64), "loss": cells["error"],
            "n": cells["n"], "routing_loss": self.routing_psi.reshape(-1),  # the shrunk cell for count-aware Psi
            "error_lo": cells["error_lo"], "error_hi": cells["error_hi"], "sparse": cells["sparse"],
        })

    def provisional_cells(self) -> np.ndarray:
        """(M, K) bool: the cells the evidence gate routes by their pessimistic bound (psi_floor > 0)."""
        if self.psi_floor is None:
            return np.zeros(self.psi.shape, dtype=bool)
        return self.psi_floor > 0

    def with_floor(self, name: str, floor_row: np.ndarray) -> Router:
        """A new router whose model `name` is routed by max(cell, floor_row) per cluster (zeros: not gated)."""
        if name not in self.models:
            raise ValueError(f"model {name!r} is not in the router (models: {list(self.models)})")
        floor = np.zeros(self.psi.shape) if self.psi_floor is None else self.psi_floor.copy()
        floor[self.models.index(name)] = np.asarray(floor_row, dtype=np.float64)
        return replace(self, psi_floor=floor if floor.any() else None)

    def model_row(self, prompt_ids: Sequence[str], X: np.ndarray,
                  losses: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Its Psi row (K,) on the router's K-means clusters from validation results (X (n, d), losses (n,)), and
        the labelled prompts per cell when the router keeps counts."""
        clusters = self.psi_clusters()
        psi = psi_from_losses(clusters.assign(X), np.asarray(losses, dtype=np.float64)[:, None], clusters.k, ["new"])
        return psi.values[0], (psi.counts[0] if self.psi_counts is not None else None)

    def holds_row(self, model: str, row: np.ndarray, counts: np.ndarray | None, cost: float) -> bool:
        """Whether the router already holds this model with exactly this Psi row, counts and cost."""
        if model not in self.models:
            return False
        i = self.models.index(model)
        same_counts = self.psi_counts is None or (counts is not None and np.array_equal(self.psi_counts[i], counts))
        return bool(np.array_equal(self.psi[i], row) and same_counts and self.costs[i] == cost)

    @property
    def routing_psi(self) -> np.ndarray:
        """(M, K) the Psi routing uses: psi with empty cells at the pool prior, shrunk toward it by `shrinkage`."""
        return self._routing_psi  # type: ignore[attr-defined]  # set by __post_init__, not a field

    def psi_clusters(self) -> Centroids:
        """The centroids a model's validation prompts are assigned with to measure its Psi row."""
        clusters = self.assigner if isinstance(self.assigner, Centroids) else self.assigner.clusters
        if clusters is None:
            raise ValueError("this LearnedMap router keeps no K-means clusters, so it cannot measure a new Psi row")
        return clusters

    def budget_reference(self) -> np.ndarray:
        """Stand-in validation prompts for budgets: `reference`, else centroids repeated by validation counts."""
        if self.reference is not None:
            return self.reference
        if not self.one_hot:
            raise ValueError("this LearnedMap router keeps no validation prompts: it cannot turn a budget into lambda")
        # Each centroid is its own nearest centroid, so a one-hot router routes this proxy as it routes the
        # validation prompts it was measured on.
        weights = np.ones(self.k, dtype=np.int64) if self.psi_counts is None else self.psi_counts.max(axis=0)
        return np.repeat(cast(Centroids, self.assigner).centers, np.maximum(weights, 0), axis=0)

    # ---- routing -------------------------------------------------------------------------------------
    def gamma(self, X: np.ndarray) -> np.ndarray:
        """(n, M) estimated loss of every model on each prompt: membership(X) (n, K) @ routing_psi.T."""
        return self.assigner.membership(X).astype(np.float64) @ self.routing_psi.T

    def _cell_bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(M, K) 95% Wilson interval of each measured Psi cell (psi.cell_frame), or None without psi_counts."""
        if self.psi_counts is None:
            return None
        # Worked out once per router (it is immutable): a cell frame per request cost serving a third of its time.
        bounds = self.__dict__.get("_bounds")
        if bounds is None:
            lo, hi = wilson_bounds(self.psi, self.psi_counts)  # psi.cell_frame's error_lo and error_hi
            bounds = (_frozen_copy(lo, np.float64), _frozen_copy(hi, np.float64))
            object.__setattr__(self, "_bounds", bounds)
        return bounds

    def candidate_errors(self, X: np.ndarray,
                         candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(error, error_lo, error_hi) (n, P): Phi(x) . routing Psi of the candidates, and Phi(x) . the 95% Wilson
        interval of each measured cell (None without psi_counts). For count-aware Psi the error is the shrunk
        cell while the interval is the measured cell's: how far validation alone pins the error down."""
        if self.one_hot:
            return self._clustered_errors(cast(Centroids, self.assigner).assign(X), candidates)
        bounds = self._cell_bounds()
        error, _, _ = super().candidate_errors(X, candidates)
        if bounds is None:
            return error, None, None
        phi = self.assigner.membership(X).astype(np.float64)
        return error, phi @ bounds[0][candidates].T, phi @ bounds[1][candidates].T

    def _clustered_errors(self, clusters: np.ndarray,
                          candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """candidate_errors of prompts in these clusters (one-hot routers): a prompt's terms are its cluster's cells
        exactly (no matmul), as cluster_table uses them."""
        error, lo, hi = self._cluster_errors(candidates)
        return error[clusters], None if lo is None else lo[clusters], None if hi is None else hi[clusters]

    def prompt_terms(self, X: np.ndarray, candidates: np.ndarray) -> tuple[
            np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """RoutingRule.prompt_terms; a one-hot router's terms also keep the prompts' clusters they were read from,
        so a caller recording the clusters (serving's decided_columns) does not assign the prompts again."""
        if not self.one_hot:
            return super().prompt_terms(X, candidates)
        clusters = cast(Centroids, self.assigner).assign(X)
        return (*self._clustered_errors(clusters, candidates), clusters)

    def _cluster_errors(self, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(error, error_lo, error_hi) (K, P) of each cluster (one-hot routers): the candidates' cells."""
        bounds = self._cell_bounds()
        error = self.routing_psi[candidates].T
        if bounds is None:
            return error, None, None
        return error, bounds[0][candidates].T, bounds[1][candidates].T

    def cluster_terms(self, lam: float, pool: Sequence[str] | None = None) -> RouteTerms:
        """The argmin's terms per cluster (K rows; one-hot assigners only): rank 1 is cluster_table's model, the
        rest its ranked fall-backs, as the published routing tables carry them."""
        if not self.one_hot:
            raise TypeError("cluster_terms needs a one-hot (Centroids) assigner; a LearnedMap routes per prompt")
        lam = check_lambda(lam)
        candidates = self.pool_indices(pool)
        error, lo, hi = self._cluster_errors(candidates)
        return RouteTerms(tuple(self.models[c] for c in candidates), candidates, error, lo, hi,
                          self.costs[candidates], lam)

    def cluster_table(self, lam: float, pool: Sequence[str] | None = None) -> np.ndarray:
        """(K,) index of the model each cluster routes to at this lambda (one-hot assigners only)."""
        if not self.one_hot:
            raise TypeError("cluster_table needs a one-hot (Centroids) assigner; a LearnedMap routes per prompt")
        lam = check_lambda(lam)
        candidates = self.pool_indices(pool)
        return argmin_cheapest(self.routing_psi.T + lam * self.costs, self.costs, candidates)

    def route(self, X: np.ndarray, lam: float = 0.0, pool: Sequence[str] | None = None) -> np.ndarray:
        """(n,) int64 index into self.models: argmin over the pool of gamma + lam * cost (ties: cheaper, lower)."""
        if self.one_hot:
            # Fast path: one (K,) table, then a gather; gamma is never materialised.
            return self.cluster_table(lam, pool)[cast(Centroids, self.assigner).assign(X)]
        return super().route(X, lam, pool)

    def _budget_rows(self, X_val: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.one_hot:
            return super()._budget_rows(X_val, candidates)
        # Prompts in one cluster share their gamma row: solve per cluster, weighted by its share of X_val.
        weights = np.bincount(cast(Centroids, self.assigner).assign(X_val), minlength=self.k).astype(np.float64)
        keep = weights > 0
        return self.routing_psi.T[:, candidates][keep], weights[keep]

    def with_cluster_costs(self, frame: pd.DataFrame) -> Router:
        """A new router whose cost cap uses each model's mean cost per cluster from the cost frame (model, cluster,
        cost_sum, n) of the rows its Psi cells come from (routers.cluster.cluster_costs)."""
        return replace(self, cost_scale=cost_scale(frame, self.models, self.k))

    def cap_rows(self, X: np.ndarray,
                 candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The budget rows of X (rows (R, P), weights (R,)) and each row's expected cost per candidate (R, P): a
        cluster's cells (one-hot), or Phi(x) . the cells (a soft map, as gamma mixes Psi); None without cost_scale."""
        rows, weights = self._budget_rows(X, candidates)
        if self.cost_scale is None:
            return rows, weights, None
        cells = (self.costs[:, None] * self.cost_scale)[candidates].T  # (K, P)
        if self.one_hot:  # _budget_rows keeps the clusters X falls in, in cluster order
            return rows, weights, cells[np.bincount(cast(Centroids, self.assigner).assign(X), minlength=self.k) > 0]
        return rows, weights, self.assigner.membership(X).astype(np.float64) @ cells

    # ---- pool edits ----------------------------------------------------------------------------------
    def with_model(self, name: str, psi_row: np.ndarray, cost: float, counts: np.ndarray | None = None) -> Router:
        """A new router with model `name` added (or its row and cost replaced, keeping its position).

        psi_row (K,) is the model's measured per-cluster loss; a shrinking router shrinks it like every row.
        """
        psi_row = np.asarray(psi_row, dtype=np.float64)
        if psi_row.shape != (self.k,):
            raise ValueError(f"psi_row for {name!r} has shape {psi_row.shape}, expected ({self.k},)")
        if (counts is None) != (self.psi_counts is None):
            raise ValueError(
                f"counts for {name!r} must be given exactly when the router keeps psi_counts "
                f"(router has counts: {self.psi_counts is not None})"
            )
        new_counts = None
        if counts is not None:
            counts = np.asarray(counts, dtype=np.int64)
            if counts.shape != (self.k,):
                raise ValueError(f"counts for {name!r} has shape {counts.shape}, expected ({self.k},)")
        if name in self.models:
            i = self.models.index(name)
            psi, costs = self.psi.copy(), self.costs.copy()
            psi[i], costs[i] = psi_row, cost
            floor = None if self.psi_floor is None else self.psi_floor.copy()
            if floor is not None:  # a refreshed row is measured anew: the gate judges it again (with_floor)
                floor[i] = 0.0
            # Its cost per cluster is measured anew too (registry.save_router_version); until then, its mean.
            scale = None if self.cost_scale is None else self.cost_scale.copy()
            if scale is not None:
                scale[i] = 1.0
            if counts is not None:
                new_counts = cast(np.ndarray, self.psi_counts).copy()  # counts are given exactly when it keeps them
                new_counts[i] = counts
            models = self.models
        else:
            psi = np.vstack([self.psi, psi_row])
            costs = np.append(self.costs, cost)
            floor = None if self.psi_floor is None else np.vstack([self.psi_floor, np.zeros(self.k)])
            scale = None if self.cost_scale is None else np.vstack([self.cost_scale, np.ones(self.k)])
            if counts is not None:
                new_counts = np.vstack([cast(np.ndarray, self.psi_counts), counts])
            models = (*self.models, name)
        return replace(self, models=models, costs=costs, psi=psi, psi_counts=new_counts,
                       psi_floor=None if floor is None or not floor.any() else floor, cost_scale=scale)

    def without_model(self, name: str) -> Router:
        """A new router without model `name`."""
        if name not in self.models:
            raise ValueError(f"model {name!r} is not in the router (models: {list(self.models)})")
        keep = np.array([m != name for m in self.models])
        return replace(
            self,
            models=tuple(m for m in self.models if m != name),
            costs=self.costs[keep],
            psi=self.psi[keep],
            psi_counts=None if self.psi_counts is None else self.psi_counts[keep],
            psi_floor=None if self.psi_floor is None or not self.psi_floor[keep].any() else self.psi_floor[keep],
            cost_scale=None if self.cost_scale is None else self.cost_scale[keep],
        )
