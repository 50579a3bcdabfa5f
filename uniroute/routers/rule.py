"""What every router kind shares: the rule argmin over the allowed pool of gamma(x, m) + lambda * c(m) (paper
eq. 5), the pool, the budget-to-lambda conversion and the embedder check. A kind supplies gamma.

Shapes: X (n, d) float32, costs (M,), gamma (n, M).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from uniroute.errors import UnirouteError
from uniroute.routers.budgets.lambda_path import lambda_path
from uniroute.routers.cluster.kmeans import as_float32_matrix
from uniroute.routers.explain import RouteTerms

if TYPE_CHECKING:
    import pandas as pd

    from uniroute.routers.cluster.kmeans import Centroids

log = logging.getLogger(__name__)

ROUTE_BLOCK = 4096  # rows per block when routing through gamma (a soft map or K-NN)


class EmbedderMismatch(UnirouteError, ValueError):
    """Prompts embedded by one embedder were given to a router fitted on another."""


class RoutingRule:
    """The routing surface of every router kind; subclasses are frozen dataclasses with embedder_id, models,
    costs and a gamma(X) (n, M) of estimated losses."""

    embedder_id: str
    models: tuple[str, ...]
    costs: np.ndarray

    if TYPE_CHECKING:  # what every stored kind (Router, KnnRouter) defines; declared for the type checker only
        @property
        def kind(self) -> str:
            """The registered kind name."""

        @property
        def k(self) -> int:
            """K clusters, or k neighbours for a K-NN router."""

        def with_model(self, name: str, psi_row: np.ndarray, cost: float,
                       counts: np.ndarray | None = None) -> RoutingRule:
            """A new router with model `name` added (or replaced in place)."""

        def without_model(self, name: str) -> RoutingRule:
            """A new router without model `name`."""

    def gamma(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover - every kind defines it
        raise NotImplementedError

    def budget_reference(self) -> np.ndarray:  # pragma: no cover - every kind defines it
        """(n, d) prompts that stand in for the validation prompts when a budget is turned into lambda."""
        raise NotImplementedError

    def check_embedder(self, embedder_id: str) -> None:
        """Refuse prompts embedded by a different embedder than the router was fitted on."""
        if embedder_id != self.embedder_id:
            raise EmbedderMismatch(
                f"prompts were embedded with {embedder_id!r} but this router was fitted on {self.embedder_id!r}"
            )

    # ---- what a router answers about itself (defaults: a kind without clusters) --------------------------
    @property
    def one_hot(self) -> bool:
        """True when routing goes through a per-cluster table (a one-hot cluster map)."""
        return False

    def psi_centroids(self) -> Centroids | None:
        """The K-means centroids a new model's Psi row is measured on; None: the kind has no clusters (its rows
        come from per-prompt labels, so battles and cluster assignments cannot give it one)."""
        return None

    def prompt_clusters(self, X: np.ndarray) -> np.ndarray | None:
        """(n,) each prompt's cluster, or None for a kind without clusters."""
        return None

    def psi_table(self) -> pd.DataFrame:
        """Long table of Psi (model, cluster, loss, n, routing_loss, error_lo, error_hi, sparse); none here."""
        import pandas as pd

        return pd.DataFrame({"model": pd.Series(dtype=object), "cluster": pd.Series(dtype=np.int64),
                             "loss": pd.Series(dtype=np.float64), "n": pd.Series(dtype=np.int64),
                             "routing_loss": pd.Series(dtype=np.float64), "error_lo": pd.Series(dtype=np.float64),
                             "error_hi": pd.Series(dtype=np.float64), "sparse": pd.Series(dtype=bool)})

    def neighbour_ids(self, X: np.ndarray, shown: int) -> list[str] | None:
        """Per prompt, its nearest reference prompts' ids joined by commas (a kind that routes by neighbours says
        which, as its stand-in for a cluster); None for a kind with clusters."""
        return None

    def clustering_id(self) -> str:  # pragma: no cover - every kind defines it
        """The id of what a new model's row is measured on (stored with every version of the router)."""
        raise NotImplementedError

    def model_row(self, prompt_ids: Sequence[str], X: np.ndarray,
                  losses: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:  # pragma: no cover
        """A model's row for with_model, and its evidence per cell or None, from its validation results: prompt
        ids (n,), embeddings X (n, d) and losses (n,)."""
        raise NotImplementedError

    def holds_row(self, model: str, row: np.ndarray, counts: np.ndarray | None, cost: float) -> bool:
        """Whether the router already holds this model with exactly this row, evidence and cost."""
        raise NotImplementedError  # pragma: no cover - every kind defines it

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

    def route(self, X: np.ndarray, lam: float = 0.0, pool: Sequence[str] | None = None) -> np.ndarray:
        """(n,) int64 index into self.models: argmin over the pool of gamma + lam * cost (ties: cheaper, lower)."""
        lam = check_lambda(lam)
        candidates = self.pool_indices(pool)
        # In row blocks so no (n, M) temporary is kept; columns in (cost, index) order once, so argmin's first
        # minimum applies the tie rule.
        order = candidates[np.lexsort((candidates, self.costs[candidates]))]
        penalty = lam * self.costs[order]  # (P,)
        X = as_float32_matrix(X)
        out = np.empty(X.shape[0], dtype=np.int64)
        for start in range(0, X.shape[0], ROUTE_BLOCK):
            gamma = self.gamma(X[start : start + ROUTE_BLOCK])[:, order]
            out[start : start + gamma.shape[0]] = order[np.argmin(gamma + penalty, axis=1)]
        return out

    def candidate_errors(self, X: np.ndarray,
                         candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(error, error_lo, error_hi), each (n, P): gamma of the candidate columns, and its 95% interval where the
        kind keeps the evidence behind it (None here: gamma alone)."""
        blocks = [self.gamma(X[s : s + ROUTE_BLOCK])[:, candidates] for s in range(0, X.shape[0], ROUTE_BLOCK)]
        error = np.concatenate(blocks) if blocks else np.empty((0, candidates.size), dtype=np.float64)
        return error, None, None

    def route_terms(self, X: np.ndarray, lam: float = 0.0, pool: Sequence[str] | None = None) -> RouteTerms:
        """The terms of the argmin for every prompt and pool model (explain.RouteTerms): its rank 1 is what route
        chooses, computed from the same floats (gamma + lam * cost)."""
        lam = check_lambda(lam)
        candidates = self.pool_indices(pool)
        error, lo, hi, clusters = self.prompt_terms(as_float32_matrix(X), candidates)
        return RouteTerms(tuple(self.models[c] for c in candidates), candidates, error, lo, hi,
                          self.costs[candidates], lam, clusters)

    def prompt_terms(self, X: np.ndarray, candidates: np.ndarray) -> tuple[
            np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """candidate_errors of X, and the prompts' clusters when a kind reads its terms from them (None here)."""
        return (*self.candidate_errors(X, candidates), None)

    def route_names(self, X: np.ndarray, lam: float = 0.0, pool: Sequence[str] | None = None) -> np.ndarray:
        """(n,) model names chosen for each prompt."""
        return np.asarray(self.models, dtype=object)[self.route(X, lam, pool)]

    def _budget_rows(self, X_val: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(distinct gamma rows (R, P), weights (R,)) of the validation prompts; kinds may merge equal rows."""
        return self.gamma(X_val)[:, candidates], np.ones(X_val.shape[0])

    def cap_rows(self, X: np.ndarray,
                 candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(rows (R, P), weights (R,), expected cost per row and candidate (R, P) or None: each candidate's one
        cost) of the prompts X, as a cost cap checks them (routers.budgets.cost_cap.lambda_for_max_cost)."""
        return (*self._budget_rows(X, candidates), None)

    def with_cluster_costs(self, frame: pd.DataFrame) -> RoutingRule:
        """The router with per-cluster model costs from a cost frame (routers.cluster.cluster_costs); a kind without
        clusters (K-NN) keeps each model's one cost: its stand-in for a cell is a prompt's k neighbours, a
        handful of validation rows whose mean cost would swing with each one's length, and the neighbour table
        would need a cost per reference prompt besides its labels."""
        return self

    def lambda_for_budget(
        self, X_val: np.ndarray | None, budget: float, pool: Sequence[str] | None = None
    ) -> float:
        """Smallest lambda whose mean routed cost on X_val is <= budget * (cost of the priciest pool model).

        X_val None: the router's own stand-in for its validation prompts (budget_reference).
        """
        budget = check_budget(budget)
        if X_val is None:
            X_val = self.budget_reference()
        candidates = self.pool_indices(pool)
        costs = self.costs[candidates]
        target = float(budget) * float(costs.max())
        lam = self.lambda_for_target(X_val, target, pool)
        if lam is None:
            rows, weights = self._budget_rows(X_val, candidates)
            mean_cost = float((weights / weights.sum()) @ costs[lambda_path(rows, costs).end])
            raise ValueError(
                f"budget {budget} (mean cost {target:.6g}) is below the least achievable mean cost "
                f"{mean_cost:.6g} (fraction {mean_cost / costs.max():.6g}) for this pool"
            )
        return lam

    def lambda_for_target(self, X: np.ndarray, target: float, pool: Sequence[str] | None = None) -> float | None:
        """Smallest lambda whose mean routed cost on the prompts X is <= target (absolute, the data's cost unit);
        None when even the cheapest routing costs more. Budgets and cost caps both end here."""
        candidates = self.pool_indices(pool)
        costs = self.costs[candidates]
        rows, weights = self._budget_rows(X, candidates)
        if rows.shape[0] == 0:
            raise ValueError("X_val is empty: cannot turn a budget into lambda")
        lam, _ = lambda_for_mean_cost(rows, costs, weights / weights.sum(), target)
        if lam is None:
            return None
        # The breakpoint is exact in real arithmetic; in floats the tie at it may tip the other way, so
        # step up until routing itself meets the target (a few ulps at most).
        for _ in range(200):
            chosen = self.route(X, lam, pool)
            if float(self.costs[chosen].mean()) <= target * (1 + 1e-12) + 1e-300:
                return float(lam)
            lam = max(np.nextafter(lam, np.inf), lam * (1 + 1e-12), 1e-300)
        raise RuntimeError(f"lambda_for_target did not converge at lambda={lam} for mean cost {target}")


# The rules of a routing request's lambda and budget, with the messages every surface shows (the CLI, the
# pyfunc, the Python API: pipeline.serving.route.RoutingRequest checks them once at the boundary).
def check_lambda(lam: float) -> float:
    """lam as a float; ValueError unless finite and >= 0."""
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lambda must be a finite number >= 0, not {lam}")
    return lam


def check_budget(budget: float) -> float:
    """budget as a float; ValueError unless in (0, 1]: a fraction of the priciest pool model's cost."""
    budget = float(budget)
    if not (np.isfinite(budget) and 0 < budget <= 1):
        raise ValueError(f"budget must be in (0, 1] (a fraction of the priciest pool model's cost), not {budget}")
    return budget


def lambda_for_mean_cost(
    rows: np.ndarray, costs: np.ndarray, weights: np.ndarray, target: float
) -> tuple[float | None, float]:
    """Smallest lambda at which the weighted mean routed cost is <= target, and the least reachable cost.

    rows (R, P): distinct gamma rows; costs (P,); weights (R,) summing to 1. Along the rule's path over lambda
    (lambda_path) the choice only ever moves to cheaper models, and each switch is an event (lambda, cost drop).
    The mean cost is a non-increasing step function of lambda, right-continuous because ties go to the cheaper
    model, so the answer is 0 or one of the events.
    """
    path = lambda_path(rows, costs)
    mean_cost0 = float(weights @ costs[path.start])
    min_cost = float(weights @ costs[path.end])
    # The same tolerance as below: a budget of 1 is met at lambda 0 even when the float sum lands an ulp above.
    if mean_cost0 <= target * (1 + 1e-12):
        return 0.0, mean_cost0
    if path.lam.size == 0 or min_cost > target * (1 + 1e-12):
        return None, min_cost
    drops = weights[path.row] * (costs[path.old] - costs[path.new])
    # Group events at an identical lambda: the step happens once for all of them.
    uniq, first = np.unique(path.lam, return_index=True)
    mean_after = mean_cost0 - np.add.reduceat(drops, first).cumsum()
    hit = np.nonzero(mean_after <= target * (1 + 1e-12))[0]
    # A target at the least reachable cost may miss the accumulated steps by an ulp: the last event reaches it.
    return float(uniq[hit[0] if hit.size else -1]), min_cost
