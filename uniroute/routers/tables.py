"""Routing tables of a one-hot router: per cluster, the model to use at each budget and lambda, with the
expected validation score and cost of each setting. What gateways read from a published snapshot."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from uniroute.routers.router import Router

log = logging.getLogger(__name__)

BUDGETS = tuple(round(0.1 * i, 1) for i in range(1, 11))
# Lambda in units of loss per (cost / most expensive pool model's cost), so the grid means the same
# thing whether costs are USD per query or billions of parameters.
NORMALISED_LAMBDAS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


@dataclass(frozen=True)
class RoutingTables:
    """What a gateway needs: routes (cluster x setting -> model) and expected score/cost per setting."""

    routes: pd.DataFrame  # columns cluster, grid, budget, lam (lambda), model
    budgets: pd.DataFrame  # columns grid, budget, lam, expected_score, expected_cost


def _cheapest_lambda(costs: np.ndarray) -> float:
    """A lambda past every switch: losses differ by at most 1, so beyond 1 / (smallest cost gap) the cheapest wins."""
    gaps = np.diff(np.unique(costs))
    return float(2.0 / gaps.min()) if len(gaps) else 0.0


def validation_weights(router: Router) -> np.ndarray:
    """(K,) validation prompts per cluster: the largest count behind any model's Psi cell in that cluster."""
    if router.psi_counts is None:
        return np.ones(router.k, dtype=np.int64)
    return router.psi_counts.max(axis=0)


def validation_proxy(router: Router) -> np.ndarray:
    """Centroids repeated by their validation counts: an exact stand-in for the validation prompts.

    Each centroid is its own nearest centroid, so a one-hot router routes this proxy exactly as it routes
    the validation prompts; turning a budget into lambda needs nothing else.
    """
    weights = validation_weights(router)
    return np.repeat(router.assigner.centers, np.maximum(weights, 0), axis=0)


def routing_tables(router: Router, pool: tuple[str, ...], cluster_weights: np.ndarray) -> RoutingTables:
    """Routes and expected score/cost on the budget grid and the lambda grid (one-hot routers only).

    cluster_weights (K,): validation prompts per cluster. Expected score and cost are validation
    estimates: the share of each cluster times the chosen model's Psi and cost.
    """
    weights = np.maximum(np.asarray(cluster_weights, dtype=np.int64), 0)
    if weights.sum() == 0:
        weights = np.ones(router.k, dtype=np.int64)
    proxy_val = np.repeat(router.assigner.centers, weights, axis=0)
    share = weights / weights.sum()
    pool_idx = router.pool_indices(pool)
    pool_costs = router.costs[pool_idx]
    max_cost = float(pool_costs.max())
    settings: list[tuple[str, float | None, float]] = []
    for budget in BUDGETS:
        try:
            lam = router.lambda_for_budget(proxy_val, budget, pool)
        except ValueError:  # below the cheapest routing: publish the cheapest, its expected cost says so
            lam = _cheapest_lambda(pool_costs)
        settings.append(("budget", budget, lam))
    settings += [("lambda", None, lam / max_cost) for lam in NORMALISED_LAMBDAS]
    clusters = np.arange(router.k)
    routes, budgets = [], []
    for grid, budget, lam in settings:
        choice = router.cluster_table(lam, pool)
        budgets.append(
            {
                "grid": grid,
                "budget": budget,
                "lam": lam,
                "expected_score": float(share @ (1.0 - router.psi[choice, clusters])),
                "expected_cost": float(share @ router.costs[choice]) / max_cost,
            }
        )
        routes += [
            {"cluster": int(c), "grid": grid, "budget": budget, "lam": lam, "model": router.models[m]}
            for c, m in enumerate(choice)
        ]
    return RoutingTables(routes=pd.DataFrame(routes), budgets=pd.DataFrame(budgets))
