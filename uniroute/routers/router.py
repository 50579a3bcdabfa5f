"""The router: r(x) = argmin over the allowed pool of gamma(x, m) + lambda * c(m) (paper eq. 5).

gamma(x, m) = Phi(x) . Psi(m) (paper eq. 8): Phi is the assigner's (n, K) cluster membership (one-hot
nearest centroid, or the LearnedMap's softmax), Psi is (M, K). Shapes: X (n, d) float32, costs (M,).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from uniroute.routers.kmeans import Centroids, as_float32_matrix

if TYPE_CHECKING:
    from uniroute.routers.learned_map import LearnedMap

log = logging.getLogger(__name__)

ROUTE_BLOCK = 4096  # rows per block when routing with a soft (LearnedMap) membership


class EmbedderMismatch(ValueError):
    """Prompts embedded by one embedder were given to a router fitted on another."""


def _frozen_copy(a: np.ndarray, dtype: type) -> np.ndarray:
    out = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


def argmin_cheapest(scores: np.ndarray, costs: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """(n,) entry of candidates minimising scores (n, M)[:, m]; ties go to the cheaper, then the lower index."""
    # Reorder the candidate columns by (cost, index): argmin returns the first minimum, which is then the
    # cheapest among tied models and, among equal costs, the lowest index.
    order = candidates[np.lexsort((candidates, costs[candidates]))]
    return order[np.argmin(scores[:, order], axis=1)]


@dataclass(frozen=True, eq=False)
class Router:
    """A fitted router over a named pool of models; routing is a pure function of it."""

    embedder_id: str
    models: tuple[str, ...]
    costs: np.ndarray  # (M,) cost per query of each model
    psi: np.ndarray  # (M, K) per-cluster mean loss
    assigner: Centroids | LearnedMap
    psi_counts: np.ndarray | None = None  # (M, K) labelled prompts behind each Psi cell

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
        if self.psi_counts is not None:
            counts = _frozen_copy(self.psi_counts, np.int64)
            if counts.shape != (m, k):
                raise ValueError(f"psi_counts has shape {counts.shape}, expected ({m}, {k})")
            object.__setattr__(self, "psi_counts", counts)

    # ---- introspection -------------------------------------------------------------------------------
    @property
    def k(self) -> int:
        """Number of clusters K."""
        return int(self.psi.shape[1])

    @property
    def one_hot(self) -> bool:
        """True when Phi is a hard nearest-centroid assignment (routing goes through a per-cluster table)."""
        return isinstance(self.assigner, Centroids)

    def check_embedder(self, embedder_id: str) -> None:
        """Refuse prompts embedded by a different embedder than the router was fitted on."""
        if embedder_id != self.embedder_id:
            raise EmbedderMismatch(
                f"prompts were embedded with {embedder_id!r} but this router was fitted on {self.embedder_id!r}"
            )

    def pool_indices(self, pool: Sequence[str] | None = None) -> np.ndarray:
        """(P,) sorted int64 indices into self.models of the allowed pool (None = every model)."""
        if pool is None:
            return np.arange(len(self.models), dtype=np.int64)
        if isinstance(pool, str):
            raise TypeError(f"pool must be a sequence of model names, not the string {pool!r}")
        index = {m: i for i, m in enumerate(self.models)}
        unknown = sorted({p for p in pool if p not in index})
        if unknown:
            raise ValueError(f"unknown models in pool: {unknown} (router models: {list(self.models)})")
        if len(pool) == 0:
            raise ValueError("the pool is empty: name at least one model")
        return np.array(sorted({index[p] for p in pool}), dtype=np.int64)

    # ---- routing -------------------------------------------------------------------------------------
    def gamma(self, X: np.ndarray) -> np.ndarray:
        """(n, M) estimated loss of every model on each prompt: membership(X) (n, K) @ psi.T."""
        return self.assigner.membership(X).astype(np.float64) @ self.psi.T

    def cluster_table(self, lam: float, pool: Sequence[str] | None = None) -> np.ndarray:
        """(K,) index of the model each cluster routes to at this lambda (one-hot assigners only)."""
        if not self.one_hot:
            raise TypeError("cluster_table needs a one-hot (Centroids) assigner; a LearnedMap routes per prompt")
        lam = _check_lambda(lam)
        candidates = self.pool_indices(pool)
        return argmin_cheapest(self.psi.T + lam * self.costs, self.costs, candidates)

    def route(self, X: np.ndarray, lam: float = 0.0, pool: Sequence[str] | None = None) -> np.ndarray:
        """(n,) int64 index into self.models: argmin over the pool of gamma + lam * cost (ties: cheaper, lower)."""
        lam = _check_lambda(lam)
        if self.one_hot:
            # Fast path: one (K,) table, then a gather; gamma is never materialised.
            return self.cluster_table(lam, pool)[self.assigner.assign(X)]
        candidates = self.pool_indices(pool)
        # Soft memberships: gamma restricted to the pool, in row blocks so no (n, M) temporary is built.
        # Columns are put in (cost, index) order once, so argmin's first minimum applies the tie rule.
        order = candidates[np.lexsort((candidates, self.costs[candidates]))]
        psi_t = np.ascontiguousarray(self.psi[order].T)  # (K, P)
        penalty = lam * self.costs[order]  # (P,)
        X = as_float32_matrix(X)
        out = np.empty(X.shape[0], dtype=np.int64)
        for start in range(0, X.shape[0], ROUTE_BLOCK):
            phi = self.assigner.membership(X[start : start + ROUTE_BLOCK]).astype(np.float64)  # (b, K)
            out[start : start + phi.shape[0]] = order[np.argmin(phi @ psi_t + penalty, axis=1)]
        return out

    def route_names(self, X: np.ndarray, lam: float = 0.0, pool: Sequence[str] | None = None) -> np.ndarray:
        """(n,) model names chosen for each prompt."""
        return np.asarray(self.models, dtype=object)[self.route(X, lam, pool)]

    def lambda_for_budget(self, X_val: np.ndarray, budget: float, pool: Sequence[str] | None = None) -> float:
        """Smallest lambda whose mean routed cost on X_val is <= budget * (cost of the priciest pool model)."""
        if not np.isfinite(budget) or budget < 0:
            raise ValueError(f"budget must be a finite fraction >= 0, got {budget}")
        candidates = self.pool_indices(pool)
        costs = self.costs[candidates]
        target = float(budget) * float(costs.max())
        if self.one_hot:
            # Prompts in one cluster share their gamma row: solve per cluster, weighted by its share of X_val.
            weights = np.bincount(self.assigner.assign(X_val), minlength=self.k).astype(np.float64)
            rows = self.psi.T[:, candidates]  # (K, P)
            keep = weights > 0
            rows, weights = rows[keep], weights[keep]
        else:
            rows = self.gamma(X_val)[:, candidates]  # (n, P)
            weights = np.ones(rows.shape[0])
        if rows.shape[0] == 0:
            raise ValueError("X_val is empty: cannot turn a budget into lambda")
        lam, mean_cost = _lambda_for_mean_cost(rows, costs, weights / weights.sum(), target)
        if lam is None:
            raise ValueError(
                f"budget {budget} (mean cost {target:.6g}) is below the least achievable mean cost "
                f"{mean_cost:.6g} (fraction {mean_cost / costs.max():.6g}) for this pool"
            )
        # The breakpoint is exact in real arithmetic; in floats the tie at it may tip the other way, so
        # step up until routing itself meets the target (a few ulps at most).
        for _ in range(200):
            chosen = self.route(X_val, lam, pool)
            if float(self.costs[chosen].mean()) <= target * (1 + 1e-12) + 1e-300:
                return float(lam)
            lam = max(np.nextafter(lam, np.inf), lam * (1 + 1e-12), 1e-300)
        raise RuntimeError(f"lambda_for_budget did not converge at lambda={lam} for budget {budget}")

    # ---- pool edits ----------------------------------------------------------------------------------
    def with_model(self, name: str, psi_row: np.ndarray, cost: float, counts: np.ndarray | None = None) -> Router:
        """A new router with model `name` added (or its row and cost replaced, keeping its position)."""
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
            if counts is not None:
                new_counts = self.psi_counts.copy()
                new_counts[i] = counts
            models = self.models
        else:
            psi = np.vstack([self.psi, psi_row])
            costs = np.append(self.costs, cost)
            if counts is not None:
                new_counts = np.vstack([self.psi_counts, counts])
            models = (*self.models, name)
        return replace(self, models=models, costs=costs, psi=psi, psi_counts=new_counts)

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
        )


def _check_lambda(lam: float) -> float:
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lambda must be finite and >= 0, got {lam}")
    return lam


def _lambda_for_mean_cost(
    rows: np.ndarray, costs: np.ndarray, weights: np.ndarray, target: float
) -> tuple[float | None, float]:
    """Smallest lambda at which the weighted mean routed cost is <= target, and the least reachable cost.

    rows (R, P): distinct gamma rows; costs (P,); weights (R,) summing to 1. Walks each row's lower envelope
    of the lines gamma_m + lambda * c_m as lambda grows from 0: the choice only ever moves to cheaper models,
    and each switch is an event (lambda, cost drop). The mean cost is a non-increasing step function of
    lambda, right-continuous because ties go to the cheaper model, so the answer is 0 or one of the events.
    """
    n_rows, p = rows.shape
    idx = np.arange(p)
    ar = np.arange(n_rows)
    cur = argmin_cheapest(rows, costs, idx)  # (R,) choice at lambda = 0
    cur_lam = np.zeros(n_rows)
    mean_cost0 = float(weights @ costs[cur])
    ev_lam: list[np.ndarray] = []
    ev_drop: list[np.ndarray] = []
    for _ in range(p):
        c_cur = costs[cur][:, None]  # (R, 1)
        g_cur = rows[ar, cur][:, None]
        cheaper = costs[None, :] < c_cur  # (R, P)
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = np.where(cheaper, (rows - g_cur) / (c_cur - costs[None, :]), np.inf)
        # A cheaper model can only overtake at or after the current lambda (else it would be chosen already).
        cross = np.maximum(cross, cur_lam[:, None])
        nxt_lam = cross.min(axis=1)
        active = np.isfinite(nxt_lam)
        if not active.any():
            break
        # Among models crossing at the same lambda, the cheapest wins (then the lowest index).
        tied = np.where(cross == nxt_lam[:, None], 0.0, np.inf)
        nxt = argmin_cheapest(tied, costs, idx)
        ev_lam.append(nxt_lam[active])
        ev_drop.append(weights[active] * (costs[cur[active]] - costs[nxt[active]]))
        cur = np.where(active, nxt, cur)
        cur_lam = np.where(active, nxt_lam, cur_lam)
    min_cost = float(weights @ costs[cur])
    if mean_cost0 <= target:
        return 0.0, mean_cost0
    if not ev_lam or min_cost > target * (1 + 1e-12):
        return None, min_cost
    lams = np.concatenate(ev_lam)
    drops = np.concatenate(ev_drop)
    order = np.argsort(lams, kind="stable")
    lams, drops = lams[order], drops[order]
    # Group events at an identical lambda: the step happens once for all of them.
    uniq, first = np.unique(lams, return_index=True)
    mean_after = mean_cost0 - np.add.reduceat(drops, first).cumsum()
    hit = np.nonzero(mean_after <= target * (1 + 1e-12))[0]
    return float(uniq[hit[0]]), min_cost
