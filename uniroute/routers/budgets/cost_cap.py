"""A hard cap on the mean cost per prompt (`--max-cost C`, in the data's cost unit): the best expected quality whose
expected mean cost on a prompt mix stays within C.

Along the rule's lambda path (lambda_path) the choice only moves to cheaper models as lambda grows, so expected
cost falls and expected loss rises with lambda: the smallest lambda whose expected mean cost is within the cap is
the best expected quality the rule reaches within it. The mix is the recent traffic's stored embeddings when
there are enough decisions, else the validation prompts (pipeline.serving.calibration says which).

`lambda_within_cost` works on per-prompt candidate rows the way the routers expose them (RoutingRule.gamma of
the pool's columns, or route_terms' error), so a caller holding rows only (a replay of logged decisions) caps the
same way `route --max-cost` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from uniroute.errors import UnirouteError
from uniroute.routers.budgets.lambda_path import lambda_path
from uniroute.routers.rule import lambda_for_mean_cost

if TYPE_CHECKING:
    from uniroute.routers.rule import RoutingRule


class CostCapError(UnirouteError, ValueError):
    """A cap no routing can meet, or one that is not a cost."""


def check_max_cost(max_cost: float) -> float:
    """max_cost as a float; ValueError unless finite and >= 0 (mean cost per prompt in the data's cost unit)."""
    max_cost = float(max_cost)
    if not (np.isfinite(max_cost) and max_cost >= 0):
        raise CostCapError(f"max cost must be a finite number >= 0 (mean cost per prompt in the data's cost unit), "
                           f"not {max_cost}")
    return max_cost


def check_reachable(max_cost: float, models: Sequence[str], costs: np.ndarray) -> float:
    """CostCapError in one line when the cap is below the cheapest model's cost (nothing routes within it); else
    the cap to search with: a cap within the tolerance below the cheapest cost is that cost."""
    cheapest = int(np.argmin(costs))
    # The same relative tolerance as the lambda search: a cap equal to the cheapest cost is met.
    if max_cost < float(costs[cheapest]) * (1 - 1e-12):
        raise CostCapError(f"max cost {max_cost:g} is below the cheapest pool model's cost "
                           f"{float(costs[cheapest]):g} ({models[cheapest]}): no routing stays within it")
    # Accepted a hair below the cheapest cost, the cap would leave no room for float noise: the weighted mean of
    # routing everything to the cheapest model (shares summing to an ulp over 1) lands above it, and the search
    # found no lambda (a RuntimeError, or "cannot be met") for a cap this check had just called met.
    return max(max_cost, float(costs[cheapest]))


def lambda_within_cost(rows: np.ndarray, costs: np.ndarray, max_cost: float,
                       weights: np.ndarray | None = None, prompt_costs: np.ndarray | None = None) -> float:
    """Smallest lambda at which the weighted mean cost of argmin(rows + lambda * costs) is <= max_cost.

    rows (n, P): per prompt (or per distinct row) each candidate's expected loss (gamma); costs (P,) the
    candidates' costs; weights (n,) how many prompts each row stands for (None: one each). CostCapError when
    max_cost is negative or below the cheapest candidate's cost. Exact in real arithmetic; a router's
    lambda_for_max_cost also checks its own floats.

    prompt_costs (n, P): what each candidate is expected to cost on each prompt, when that is known better than
    its one cost (e.g. per cluster: long prompts cost more on every model). The rule still ranks by costs; the cap
    is then checked on these, so the mean cost along the path need not fall monotonically: the smallest lambda
    within the cap is found by scanning the path's switches.
    """
    max_cost = check_max_cost(max_cost)
    rows = np.asarray(rows, dtype=np.float64)
    costs = np.asarray(costs, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[1] != costs.shape[0]:
        raise ValueError(f"rows must be (n, {costs.shape[0]}) for {costs.shape[0]} candidate costs, not {rows.shape}")
    if rows.shape[0] == 0:
        raise ValueError("no prompts in the mix: cannot turn a max cost into lambda")
    weights = np.ones(rows.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    share = weights / weights.sum()
    if prompt_costs is None:
        max_cost = check_reachable(max_cost, [f"candidate {i}" for i in range(costs.size)], costs)
        lam, _ = lambda_for_mean_cost(rows, costs, share, max_cost)
        lam = float(lam if lam is not None else 0.0)  # reachable: the cap is at least the path's end, the cheapest
        per_row = np.broadcast_to(costs, rows.shape)
    else:
        per_row = np.asarray(prompt_costs, dtype=np.float64)
        lam = _scan_path(rows, costs, share, per_row, max_cost)
    # The breakpoint is exact in real arithmetic; in floats the tie at it may tip to the dearer model, so step up
    # until the argmin itself (ties to the cheaper, as RoutingRule.route) meets the cap: a few ulps at most.
    order = np.lexsort((np.arange(costs.size), costs))
    for _ in range(200):
        chosen = order[np.argmin(rows[:, order] + lam * costs[order], axis=1)]
        if float(share @ per_row[np.arange(len(chosen)), chosen]) <= max_cost * (1 + 1e-12) + 1e-300:
            return lam
        lam = max(float(np.nextafter(lam, np.inf)), lam * (1 + 1e-12), 1e-300)
    raise RuntimeError(f"lambda_within_cost did not converge at lambda={lam} for max cost {max_cost}")


def _scan_path(rows: np.ndarray, costs: np.ndarray, share: np.ndarray, per_row: np.ndarray, max_cost: float) -> float:
    """The smallest lambda on the rule's path whose mean of per_row costs is within max_cost (CostCapError if none)."""
    path = lambda_path(rows, costs)
    index = np.arange(rows.shape[0])
    mean0 = float(share @ per_row[index, path.start])
    if mean0 <= max_cost * (1 + 1e-12):
        return 0.0
    if path.lam.size:
        drops = share[path.row] * (per_row[path.row, path.old] - per_row[path.row, path.new])
        uniq, first = np.unique(path.lam, return_index=True)
        hit = np.nonzero(mean0 - np.add.reduceat(drops, first).cumsum() <= max_cost * (1 + 1e-12))[0]
        if hit.size:
            return float(uniq[hit[0]])
    least = float(share @ per_row[index, path.end])
    raise CostCapError(f"max cost {max_cost:g} is below the least expected mean cost {least:g} on this prompt mix")


def lambda_for_max_cost(router: RoutingRule, X: np.ndarray, max_cost: float,
                        pool: Sequence[str] | None = None) -> float:
    """The router's smallest lambda whose expected mean cost on the prompts X (n, d) is <= max_cost; CostCapError
    naming the cheapest pool model when the cap is below its cost.

    Every surface that turns a cap into lambda ends here (route, route --file, the pyfunc, replay, the flows).
    A router with per-cluster model costs (routers.cluster.cluster_costs) is checked on them: the rule still ranks by
    each model's one cost, only the cap's expected mean cost is per cluster. Without them (routers stored
    before), each model's one cost."""
    max_cost = check_max_cost(max_cost)
    candidates = router.pool_indices(pool)
    # Below the cheapest model's own cost is refused alike with or without per-cluster costs (serving refuses it
    # before any calibration), so every surface says the same thing.
    max_cost = check_reachable(max_cost, [router.models[c] for c in candidates], router.costs[candidates])
    rows, weights, cell_costs = router.cap_rows(X, candidates)
    if cell_costs is not None:
        return lambda_within_cost(rows, router.costs[candidates], max_cost, weights, prompt_costs=cell_costs)
    lam = router.lambda_for_target(X, max_cost, pool)
    if lam is None:  # unreachable in floats only: the cheapest model's cost is within the cap
        raise CostCapError(f"max cost {max_cost:g} cannot be met on this prompt mix")
    return lam
