"""The evidence gate: where a newcomer would win traffic on too little evidence, it is provisional there.

Built on the two rules before it: a model under UNIROUTE_MIN_VAL_ANSWERS answers waits (pipeline/pool/evidence.py),
and an empty or thin Psi cell leans on the pool prior (routers/psi.pool_prior). Neither stops a model whose three
lucky answers in one cluster measure error 0.0 there from taking that cluster's whole traffic: the cell has
answers, so it is the plain mean. The gate looks, per cluster, at the interval of the newcomer's error (Wilson's
95% interval of its answers there, the interval `model_cluster_errors` and `route --explain` show) and at the
routing decision at the default budget with and without it. Where it wins and its evidence there is thin (fewer
than `min_cluster_answers` answers, or an interval wider than `max_interval_width`), it is provisional: it routes
there by the upper end of its interval (Router.psi_floor), so it keeps the cluster only if even its pessimistic
error wins. Why that and not a capped share: a one-hot routing table sends a cluster to one model, and a cap
would need randomised routing on every serving surface; a bound keeps routing a pure function of the router, so
the CLI, the pyfunc, the Python API and the published tables agree without knowing about the gate. Its next
answers are the onboarding set's continuation restricted to those clusters (pipeline/pool/onboarding_set.py); once
they are in, onboarding it again measures the cells anew and the gate judges them again (full or still
provisional).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from uniroute.routers.budgets.lambda_path import argmin_cheapest
from uniroute.routers.cluster.psi import INTERVAL_Z, cell_frame
from uniroute.routers.tables import default_budget

# A cell with fewer answers than this is thin whatever its interval: Wilson's interval of 3 correct answers is
# [0, 0.56], too wide, but of 8 correct ones [0, 0.32], which a lucky streak also gives.
MIN_CLUSTER_ANSWERS = 10
# Wilson's 95% interval at error 0.5 is 0.53 wide with 10 answers and 0.44 with 16: a wider one cannot tell a
# model that is better than the pool from one that is as good.
MAX_INTERVAL_WIDTH = 0.5
MAX_ANSWERS_SUGGESTED = 1000  # the search for the answers a cell needs stops here (a width nobody reaches)


@dataclass(frozen=True)
class GateThresholds:
    """When a cell's evidence is too thin to take traffic on (settings: UNIROUTE_GATE_MIN_CLUSTER_ANSWERS,
    UNIROUTE_GATE_MAX_INTERVAL_WIDTH)."""

    min_cluster_answers: int = MIN_CLUSTER_ANSWERS
    max_interval_width: float = MAX_INTERVAL_WIDTH

    def __post_init__(self) -> None:
        if self.min_cluster_answers < 0 or not (0.0 < self.max_interval_width <= 1.0):
            raise ValueError(f"evidence gate thresholds must be answers >= 0 and a width in (0, 1], got "
                             f"{self.min_cluster_answers} and {self.max_interval_width}")


@dataclass(frozen=True)
class ModelGate:
    """The gate's verdict on one model: per cluster its interval, the decisions, and what it routes by."""

    model: str
    budget: float  # the default budget the decisions were taken at (routers.tables.default_budget)
    cells: pd.DataFrame  # one row per cluster: GATE_COLUMNS
    floor: np.ndarray  # (K,) the bound each provisional cell routes by (0: not gated)

    @property
    def provisional(self) -> list[int]:
        """Clusters where it would win on too little evidence."""
        return [int(c) for c in self.cells.loc[self.cells["provisional"], "cluster"]]

    @property
    def status(self) -> str:
        return "provisional" if self.provisional else "full"

    def answers_needed(self) -> dict[int, int]:
        """{provisional cluster: answers still needed there}."""
        rows = self.cells[self.cells["provisional"]]
        return {int(c): int(n) for c, n in zip(rows["cluster"], rows["answers_needed"], strict=True)}


GATE_COLUMNS = ("cluster", "answers", "error", "error_lo", "error_hi", "interval_width", "winner_without",
                "winner_with", "wins", "thin", "provisional", "routing_error", "wins_on_bound", "answers_needed")


def wilson_width(error: float, n: int) -> float:
    """Width of the 95% Wilson interval of a mean error over n answers (1.0 without answers)."""
    if n <= 0:
        return 1.0
    z2 = INTERVAL_Z**2
    half = INTERVAL_Z * math.sqrt(error * (1 - error) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    centre = (error + z2 / (2 * n)) / (1 + z2 / n)
    return min(centre + half, 1.0) - max(centre - half, 0.0)


def answers_to_full(error: float, n: int, thresholds: GateThresholds) -> int:
    """Answers a cell at this error needs beyond its n before the gate calls it full (the error assumed to stay)."""
    target = max(n, thresholds.min_cluster_answers)
    while wilson_width(error, target) > thresholds.max_interval_width and target < MAX_ANSWERS_SUGGESTED:
        target += 1
    return max(target - n, 1)


def _winners(router, pool: tuple[str, ...]) -> tuple[float, list[str]]:
    """(default budget, (K,) the model each cluster goes to there): per cluster the argmin over the pool of its
    routing cell + lambda x cost (a one-hot table's rule; a soft map's prompts of a pure cluster go there too)."""
    budget, lam, _, _ = default_budget(router, pool)
    candidates = router.pool_indices(pool)
    chosen = argmin_cheapest(router.routing_psi.T + lam * router.costs, router.costs, candidates)
    return budget, [router.models[i] for i in chosen]


def gate_model(router, model: str, pool: tuple[str, ...], thresholds: GateThresholds) -> ModelGate:
    """The gate on `model` in `router` (its measured row, not gated yet) against the rest of the active `pool`."""
    i = router.models.index(model)
    others = tuple(m for m in pool if m != model)
    with_it = (*others, model)
    k = router.k
    if others:
        _, without = _winners(router.without_model(model), others)
    else:  # alone in the pool, it takes everything whatever the gate says: nothing to compare
        without = [""] * k
    budget, winners = _winners(router, with_it)
    counts = router.psi_counts[i] if router.psi_counts is not None else np.zeros(k, dtype=np.int64)
    cells = cell_frame([model], router.psi[i][None, :], counts[None, :])
    width = (cells["error_hi"] - cells["error_lo"]).to_numpy()
    wins = np.array([w == model for w in winners]) & bool(others)
    thin = (counts < thresholds.min_cluster_answers) | (width > thresholds.max_interval_width + 1e-12)
    provisional = wins & thin
    floor = np.where(provisional, cells["error_hi"].to_numpy(), 0.0)
    gated = router.with_floor(model, floor)
    _, on_bound = _winners(gated, with_it)
    needed = [answers_to_full(float(e), int(n), thresholds) if p else 0
              for e, n, p in zip(cells["error"], counts, provisional, strict=True)]
    frame = pd.DataFrame({
        "cluster": np.arange(k, dtype=np.int64), "answers": counts.astype(np.int64), "error": cells["error"],
        "error_lo": cells["error_lo"], "error_hi": cells["error_hi"], "interval_width": width,
        "winner_without": without, "winner_with": winners, "wins": wins, "thin": thin, "provisional": provisional,
        "routing_error": gated.routing_psi[gated.models.index(model)],
        "wins_on_bound": np.array([w == model for w in on_bound]), "answers_needed": np.asarray(needed, np.int64),
    }, columns=list(GATE_COLUMNS))
    return ModelGate(model, budget, frame, floor)
