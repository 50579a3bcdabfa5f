"""Routing tables of a router: the lambda of each budget, with the expected validation score and cost of each
setting, and (one-hot routers) per cluster the model to use. What gateways read from a published snapshot.

A one-hot (K-means) router routes by a (cluster x setting -> model, ranked fall-backs) table; a LearnedMap or
K-NN router routes per prompt, so its snapshot carries the router itself and its `routes` table is empty, while its
budget rows
(budget -> lambda, expected score and cost) are computed the same way on its validation stand-in.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from uniroute.routers.rule import RoutingRule

if TYPE_CHECKING:
    import pandas as pd

    from uniroute.routers.cluster.kmeans import Centroids
    from uniroute.routers.router import Router

log = logging.getLogger(__name__)

BUDGETS = tuple(round(0.1 * i, 1) for i in range(1, 11))
# Lambda in units of loss per (cost / most expensive pool model's cost), so the grid means the same
# thing whether costs are USD per query or billions of parameters.
NORMALISED_LAMBDAS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
ROUTE_COLUMNS = ("cluster", "grid", "budget", "lam", "model", "fallbacks", "provisional")


@dataclass(frozen=True)
class RoutingTables:
    """What a gateway needs: routes (cluster x setting -> model; one-hot only), expected score/cost per setting."""

    routes: pd.DataFrame  # columns cluster, grid, budget, lam (lambda), model, fallbacks (the rest of the pool, best
    # first: where a gateway sends the cluster's prompts when the model is down), provisional (the pool models the
    # evidence gate routes by their error's upper bound in the cluster: pipeline/pool/evidence_gate.py)
    budgets: pd.DataFrame  # columns grid, budget, lam, expected_score, expected_cost


def _cheapest_lambda(costs: np.ndarray) -> float:
    """A lambda past every switch: losses differ by at most 1, so beyond 1 / (smallest cost gap) the cheapest wins."""
    gaps = np.diff(np.unique(costs))
    return float(2.0 / gaps.min()) if len(gaps) else 0.0


def validation_weights(router: RoutingRule) -> np.ndarray:
    """(K,) validation prompts per cluster of a one-hot router: the largest count behind any model's cell there."""
    counts = getattr(router, "psi_counts", None)
    if counts is None:
        return np.ones(router.k, dtype=np.int64)
    return counts.max(axis=0)


def validation_proxy(router: RoutingRule) -> np.ndarray:
    """Stand-in validation prompts of any router kind, for turning a budget into lambda (budget_reference)."""
    return router.budget_reference()


def routing_tables(
    router: RoutingRule, pool: tuple[str, ...], cluster_weights: np.ndarray | None = None,
    reference: np.ndarray | None = None,
) -> RoutingTables:
    """Budget and lambda grids with expected validation score and cost; routes per cluster for one-hot routers.

    cluster_weights (K,): prompts per cluster of a one-hot router (default: the validation counts; the recent
    traffic's when budgets are calibrated on it); other kinds weigh their budget_reference prompts (or `reference`,
    e.g. the recent traffic's) equally. Expected score and cost are estimates: the mean over those prompts of the
    chosen model's estimated score and its cost.
    """
    return _tables(router, pool, cluster_weights, reference, with_routes=True)


def budget_rows(router: RoutingRule, pool: tuple[str, ...]) -> pd.DataFrame:
    """The routing tables' budget rows alone (routing_tables(router, pool).budgets), without the routes and their
    ranked fall-backs, half of the tables' cost: what the default setting, asked three times by every onboarding's
    evidence gate, reads."""
    return _tables(router, pool, None, None, with_routes=False).budgets


def _tables(router: RoutingRule, pool: tuple[str, ...], cluster_weights: np.ndarray | None,
            reference: np.ndarray | None, with_routes: bool) -> RoutingTables:
    """routing_tables; with_routes False leaves the routes table empty."""
    pool_idx = router.pool_indices(pool)
    pool_costs = router.costs[pool_idx]
    # Costs are published as fractions of the priciest pool model's; a pool of free models has no cost axis.
    max_cost = float(pool_costs.max()) or 1.0
    one_hot = bool(getattr(router, "one_hot", False))
    reference, gamma_rows, share = _weighted_rows(router, cluster_weights, reference)
    settings: list[tuple[str, float | None, float]] = []
    for each in BUDGETS:
        try:
            lam = router.lambda_for_budget(reference, each, pool)
        except ValueError:  # below the cheapest routing: publish the cheapest, its expected cost says so
            lam = _cheapest_lambda(pool_costs)
        settings.append(("budget", each, lam))
    settings += [("lambda", None, lam / max_cost) for lam in NORMALISED_LAMBDAS]
    rows = np.arange(gamma_rows.shape[0])
    routes, budgets = [], []
    provisional = _provisional(router, pool_idx) if one_hot and with_routes else []
    for grid, budget, lam in settings:
        # One-hot: the ranked terms per cluster (routers.explain), so the chosen model and its fall-backs come
        # from one ranking; rank 1 is exactly cluster_table's choice.
        terms = cast("Router", router).cluster_terms(lam, pool) if one_hot else None
        choice = terms.chosen() if terms is not None else router.route(reference, lam, pool)
        budgets.append(
            {
                "grid": grid,
                "budget": budget,
                "lam": lam,
                "expected_score": float(share @ (1.0 - gamma_rows[rows, choice])),
                "expected_cost": float(share @ router.costs[choice]) / max_cost,
            }
        )
        if terms is not None and with_routes:  # one_hot
            fallbacks = terms.summary()["fallbacks"]
            routes += [
                {"cluster": int(c), "grid": grid, "budget": budget, "lam": lam, "model": router.models[m],
                 "fallbacks": fallbacks[c], "provisional": provisional[c]}
                for c, m in enumerate(choice)
            ]
    import pandas as pd  # here: `uniroute route` reads a default setting computed at publish time, no table

    return RoutingTables(routes=pd.DataFrame(routes, columns=list(ROUTE_COLUMNS)), budgets=pd.DataFrame(budgets))


def _weighted_rows(router: RoutingRule, cluster_weights: np.ndarray | None,
                   reference: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(reference prompts, their (rows, M) gamma, (rows,) weights summing to 1) that expected scores average over:
    a one-hot router's clusters weighted by their prompts, another kind's reference prompts equally."""
    if getattr(router, "one_hot", False):
        weights = validation_weights(router) if cluster_weights is None else cluster_weights
        weights = np.maximum(np.asarray(weights, dtype=np.int64), 0)
        if weights.sum() == 0:
            weights = np.ones(router.k, dtype=np.int64)
        hard = cast("Router", router)  # only a cluster router with Centroids is one-hot
        # (K, M): a cluster's prompts share their gamma row
        return (np.repeat(cast("Centroids", hard.assigner).centers, weights, axis=0), hard.routing_psi.T,
                weights / weights.sum())
    reference = router.budget_reference() if reference is None else reference
    return reference, router.gamma(reference), np.full(reference.shape[0], 1.0 / reference.shape[0])


def _provisional(router: RoutingRule, pool_idx: np.ndarray) -> list[list[str]]:
    """Per cluster, the pool models whose cell there the evidence gate routes by its bound (router.psi_floor)."""
    floor = getattr(router, "psi_floor", None)
    if floor is None:
        return [[] for _ in range(router.k)]
    return [[router.models[m] for m in pool_idx if floor[m, c] > 0] for c in range(router.k)]


# The default routing setting when a request names neither a budget nor a lambda: lambda 0 sends every prompt to
# the model with the best expected score, usually the priciest, which costs the most for the last points of quality.
# The default is the cheapest published setting (budget or lambda row) whose expected validation score keeps this
# share of the gain from the cheapest setting's expected score to the best (docs/decisions/0200-default-setting.md).
# "Within 0.01 of the best" saved nothing where the best model led by more than that everywhere (RouterBench: the
# priciest model for every prompt), and gave up more than half of a small gain (RouterDC) for a few percent of cost.
DEFAULT_GAIN_KEPT = 0.9


def cheapest_setting_score(router: RoutingRule, pool: tuple[str, ...]) -> float:
    """The expected validation score of the cheapest routing: every prompt to the best of the cheapest pool models."""
    _, gamma_rows, share = _weighted_rows(router, None, None)
    lam = _cheapest_lambda(router.costs[router.pool_indices(pool)])
    if getattr(router, "one_hot", False):
        choice = cast("Router", router).cluster_terms(lam, pool).chosen()  # one-hot: a cluster router
    else:
        choice = router.route(router.budget_reference(), lam, pool)
    return float(share @ (1.0 - gamma_rows[np.arange(len(choice)), choice]))


DefaultSetting = tuple[float, float, float, float]  # (budget, its lambda, its expected score, the best score)
# Each router's default settings by (pool, keep). A router is immutable, so its default is worked out once (the
# routing tables behind it cost a served request 200 ms) and dies with it; keyed on the router object itself.
_DEFAULTS: weakref.WeakKeyDictionary[RoutingRule, dict[tuple[tuple[str, ...], float], DefaultSetting]] = (
    weakref.WeakKeyDictionary())


def default_budget(router: RoutingRule, pool: tuple[str, ...],
                   keep: float = DEFAULT_GAIN_KEPT) -> DefaultSetting:
    """(budget, its lambda, its expected score, the best expected score) of the default setting: the published
    row of least expected cost whose expected score keeps `keep` of the gain from the cheapest setting to the best.

    A budget row is named by its budget; a lambda row (the budget grid is too coarse where every model costs
    within a tenth of the priciest) by its expected cost, the budget it meets. The numbers are the routing
    tables' own, so the published tables, `uniroute route` and the served model agree on the default.
    """
    if not (np.isfinite(keep) and 0 <= keep <= 1):
        raise ValueError(f"the share of the gain to keep must be in [0, 1], got {keep}")
    known = _DEFAULTS.setdefault(router, {})
    key = (tuple(pool), float(keep))
    if key not in known:
        known[key] = _default_budget(router, key[0], key[1])
    return known[key]


def _default_budget(router: RoutingRule, pool: tuple[str, ...], keep: float) -> DefaultSetting:
    """default_budget, worked out from the router's routing tables."""
    rows = budget_rows(router, pool)
    best = float(rows["expected_score"].max())
    floor = min(cheapest_setting_score(router, pool), best)
    kept = rows[rows["expected_score"] >= floor + keep * (best - floor) - 1e-12]
    # Least cost first; at equal cost the better score, then a budget row (a round number) before a lambda row.
    order = kept.assign(is_lambda=kept["grid"] != "budget", minus_score=-kept["expected_score"])
    chosen = order.sort_values(["expected_cost", "minus_score", "is_lambda", "budget"], kind="stable").iloc[0]
    budget = float(chosen["budget"]) if chosen["grid"] == "budget" else float(chosen["expected_cost"])
    return budget, float(chosen["lam"]), float(chosen["expected_score"]), best
