"""Deferral curves (paper section 6): the exact routing path over lambda, the upper monotone envelope of its
(normalised cost, score) points, and the metrics Area, Area50, QNC and Peak (DESIGN.md section 4)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from uniroute.routers.budgets.lambda_path import LambdaPath, lambda_path

log = logging.getLogger(__name__)

# Normalised-cost grid on which per-trial curves are averaged for the plot and the JSON.
CURVE_GRID = np.linspace(0.0, 1.0, 201)
# A curve "reaches" a score when it is within this of it: curve scores are sums of per-prompt scores
# accumulated in a different order than the single LLM's mean, so exact equality can miss by an ulp.
REACH_TOL = 1e-9


@dataclass(frozen=True)
class Curve:
    """Upper monotone envelope of (normalised cost, score) points: both strictly increasing."""

    cost: np.ndarray  # (P,) strictly increasing
    score: np.ndarray  # (P,) strictly increasing

    def at(self, x: np.ndarray) -> np.ndarray:
        """Curve values at costs x: linear between vertices, constant beyond the first and last."""
        return np.interp(x, self.cost, self.score)


def upper_envelope(cost: np.ndarray, score: np.ndarray) -> Curve:
    """Keep the points no other point dominates (cheaper-or-equal and at least as good), sorted by cost."""
    cost = np.asarray(cost, dtype=np.float64).ravel()
    score = np.asarray(score, dtype=np.float64).ravel()
    if cost.shape != score.shape or cost.size == 0:
        raise ValueError(f"need equal, non-empty cost and score arrays, got {cost.shape} and {score.shape}")
    if not (np.all(np.isfinite(cost)) and np.all(np.isfinite(score))):
        raise ValueError("curve points must be finite")
    order = np.lexsort((-score, cost))  # by cost, best score first among equal costs
    cost, score = cost[order], score[order]
    # A point survives when it beats every cheaper-or-equal point before it.
    prev_best = np.concatenate([[-np.inf], np.maximum.accumulate(score)[:-1]])
    keep = score > prev_best
    return Curve(cost=cost[keep], score=score[keep])


def curve_area(curve: Curve, lo: float = 0.0, hi: float = 1.0) -> float:
    """Exact integral of the piecewise-linear curve over normalised cost [lo, hi]."""
    if not hi > lo:
        raise ValueError(f"need lo < hi, got [{lo}, {hi}]")
    inside = curve.cost[(curve.cost > lo) & (curve.cost < hi)]
    xs = np.concatenate([[lo], inside, [hi]])
    return float(np.trapezoid(curve.at(xs), xs))


def reach_cost(curve: Curve, target: float) -> float:
    """Least normalised cost at which the curve reaches `target`, searched from its first vertex (inf if never).

    The curve is held constant to the left of its first vertex for Area, but no router attains a cost below its
    cheapest point, so the search starts there (otherwise a curve starting above the target would get cost 0).
    """
    reached = np.nonzero(curve.score >= target - REACH_TOL)[0]
    if reached.size == 0:
        return math.inf
    j = int(reached[0])
    if j == 0:
        return float(curve.cost[0])
    x0, x1 = curve.cost[j - 1], curve.cost[j]
    y0, y1 = curve.score[j - 1], curve.score[j]
    return float(x0 + (min(target, y1) - y0) / (y1 - y0) * (x1 - x0))


def curve_metrics(curve: Curve, best_score: float, best_cost: float) -> dict[str, float]:
    """Area, Area50, QNC (relative to the best single LLM at normalised cost best_cost) and Peak.

    A free best LLM (cost 0, e.g. a self-hosted model logged at no cost) leaves QNC undefined: NaN, which
    reports leave out of the mean and do not count as "never reached".
    """
    if not best_cost >= 0:
        raise ValueError(f"the best single LLM's normalised cost must be >= 0, got {best_cost}")
    return {
        "area": curve_area(curve, 0.0, 1.0),
        "area50": curve_area(curve, 0.0, 0.5),
        "qnc": reach_cost(curve, best_score) / best_cost if best_cost > 0 else math.nan,
        "peak": float(curve.score.max()),
    }


# Each prompt's routed model as lambda grows: a start model and switch events to cheaper models.
SwitchPath = LambdaPath


def switch_path(gamma: np.ndarray, costs: np.ndarray) -> SwitchPath:
    """Exact routing path of argmin_m gamma[i, m] + lam * costs[m] over lam >= 0 (ties: cheaper, lower index).

    gamma (n, M), costs (M,), as float64: the rule's own path (routers.budgets.lambda_path), which walks identical gamma
    rows (every prompt of a cluster) once.
    """
    gamma = np.asarray(gamma, dtype=np.float64)
    costs = np.asarray(costs, dtype=np.float64)
    n, m = gamma.shape
    if costs.shape != (m,):
        raise ValueError(f"costs has shape {costs.shape}, expected ({m},)")
    if not np.all(np.isfinite(gamma)):
        raise ValueError("gamma must be finite")
    return lambda_path(gamma, costs)


def lambda_grid(path: SwitchPath, n_lambdas: int = 256) -> np.ndarray:
    """0 plus n_lambdas log-spaced values from the first to the last switch of the path (covers every switch).

    At lambda = 0 every prompt gets its best-quality model; at the last switch every prompt has reached the
    cheapest model it will ever get, so the grid spans the best-quality to the cheapest routing.
    """
    positive = path.lam[path.lam > 0]
    if positive.size == 0:
        return np.zeros(1)
    lo, hi = float(positive.min()), float(positive.max())
    if hi <= lo:
        return np.array([0.0, lo])
    grid = np.geomspace(lo, hi, n_lambdas)
    grid[0], grid[-1] = lo, hi  # exact ends: the first and the last switch are on the grid
    return np.concatenate([[0.0], grid])


def routed_points(
    gamma: np.ndarray,
    router_costs: np.ndarray,
    scores: np.ndarray,
    prompt_costs: np.ndarray,
    n_lambdas: int = 256,
) -> tuple[np.ndarray, np.ndarray]:
    """(cost (L,), score (L,)) of routing by argmin gamma + lam * router_costs over the lambda grid.

    gamma (n, M) estimated losses; router_costs (M,) the costs the router sees; scores (n, M) and
    prompt_costs (n, M) the realised score and (normalised) cost of each prompt on each model.
    """
    n = gamma.shape[0]
    if n == 0:
        raise ValueError("no prompts to route")
    path = switch_path(gamma, router_costs)
    lams = lambda_grid(path, n_lambdas)
    score0 = scores[np.arange(n), path.start].sum()
    cost0 = prompt_costs[np.arange(n), path.start].sum()
    d_score = scores[path.row, path.new] - scores[path.row, path.old]
    d_cost = prompt_costs[path.row, path.new] - prompt_costs[path.row, path.old]
    # Routing at lambda includes every switch at or below it (ties go to the cheaper model).
    upto = np.searchsorted(path.lam, lams, side="right")
    cum_score = np.concatenate([[0.0], np.cumsum(d_score)])
    cum_cost = np.concatenate([[0.0], np.cumsum(d_cost)])
    return (cost0 + cum_cost[upto]) / n, (score0 + cum_score[upto]) / n


def routing_curve(
    gamma: np.ndarray, router_costs: np.ndarray, scores: np.ndarray, prompt_costs: np.ndarray, n_lambdas: int = 256
) -> Curve:
    """Deferral curve (upper monotone envelope) of a gamma-based router on labelled prompts."""
    cost, score = routed_points(gamma, router_costs, scores, prompt_costs, n_lambdas)
    return upper_envelope(cost, score)


def routed_matrices(
    gamma: np.ndarray,
    router_costs: np.ndarray,
    scores: np.ndarray,
    prompt_costs: np.ndarray,
    n_lambdas: int = 256,
) -> tuple[np.ndarray, np.ndarray]:
    """(score (n, L), cost (n, L)) of each prompt's routed model at each lambda of the grid.

    The per-prompt form of routed_points (whose points are these matrices' column means): reweighting the
    prompts, as a bootstrap does, reweights the columns' means without routing again.
    """
    n = gamma.shape[0]
    if n == 0:
        raise ValueError("no prompts to route")
    path = switch_path(gamma, router_costs)
    lams = lambda_grid(path, n_lambdas)
    # A switch at lambda applies from the first grid value >= lambda (ties go to the cheaper model).
    col = np.searchsorted(lams, path.lam, side="left")
    out = []
    for values in (scores, prompt_costs):
        delta = np.zeros((n, lams.size + 1))
        np.add.at(delta, (path.row, col), values[path.row, path.new] - values[path.row, path.old])
        out.append(values[np.arange(n), path.start][:, None] + np.cumsum(delta, axis=1)[:, : lams.size])
    return out[0], out[1]


def bootstrap_areas(score: np.ndarray, cost: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(B,) Area of the curve each row of prompt weights (B, n) gives, from routed_matrices' (n, L) outputs."""
    s, c = weights @ score, weights @ cost  # (B, L) curve points under each reweighting
    return np.array([curve_area(upper_envelope(ci, si)) for ci, si in zip(c, s, strict=True)])
