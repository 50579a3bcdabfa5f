"""The terms of a routing decision: per prompt and candidate model, the expected error gamma(x, m), its interval
where the router keeps the evidence behind it, the cost c(m), lambda * c(m), the total and the rank.

Routing (`uniroute route`, the pyfunc, the Python API) takes the chosen model from these very numbers (rank 1),
so an explanation can never disagree with the decision it explains; rank r + 1 is the fall-back after rank r.
Ranks follow the rule's tie order: the smaller total, then the cheaper model, then the lower router index.

Shapes: n prompts, P candidate (pool) models.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

EXPLAIN_COLUMNS = ("rank", "model", "expected_error", "error_lo", "error_hi", "cost", "lam_cost", "total",
                   "latency_s")


def ranked_order(total: np.ndarray, costs: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """(n, P) candidate positions best first: by total (n, P), then cost (P,), then router index (P,)."""
    shape = total.shape
    return np.lexsort((np.broadcast_to(candidates, shape), np.broadcast_to(costs, shape), total), axis=1)


def fallback_lists(names: np.ndarray, order: np.ndarray, weights: np.ndarray | None = None) -> list[list[str]]:
    """Per row of order (n, P), the names after the first. Built once per distinct ranking (a K-means router has
    at most K): one Python list per prompt cost route --file a tenth of its time at 10,000 prompts."""
    if order.shape[0] == 0:
        return []
    if order.shape[0] == 1:  # a server's one-prompt request: no rankings to share
        return [names[order[0, 1:]].tolist()]
    # Rows are grouped by a wrapping 64-bit key (np.unique on rows sorts them as bytes, ten times slower); the
    # check below makes a key collision cost speed, never a wrong list.
    if weights is None:
        weights = _row_weights(order.shape[1])
    with np.errstate(over="ignore"):
        keys = order.astype(np.int64) @ weights
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if not np.array_equal(order[first][inverse], order):
        return [names[row[1:]].tolist() for row in order]
    lists = [names[order[i, 1:]].tolist() for i in first]
    return [lists[i] for i in inverse.reshape(-1)]


@functools.cache  # the same weights every call: a generator per call was a tenth of a one-prompt summary
def _row_weights(width: int) -> np.ndarray:
    """(width,) the random int64 weights fallback_lists keys a ranking row by (seed 0), read-only."""
    weights = cast(np.ndarray, np.random.default_rng(0).integers(1, 2**62, width, dtype=np.int64))
    weights.setflags(write=False)
    return weights


@dataclass(frozen=True, eq=False)
class RouteTerms:
    """The terms of the argmin for n prompts over P candidates, and their ranking."""

    models: tuple[str, ...]  # (P,) candidate names, in router index order
    candidates: np.ndarray  # (P,) int64 indices into the router's models
    error: np.ndarray  # (n, P) expected error gamma(x, m) routing uses (shrunk cells for count-aware Psi)
    error_lo: np.ndarray | None  # (n, P) 95% interval of the measured error behind it; None: the kind keeps none
    error_hi: np.ndarray | None
    costs: np.ndarray  # (P,) cost per query c(m)
    lam: float
    clusters: np.ndarray | None = None  # (n,) the prompts' clusters when the terms were read from them (one-hot)

    @property
    def lam_cost(self) -> np.ndarray:
        """(P,) lambda * c(m), the cost term."""
        return self.lam * self.costs

    @property
    def total(self) -> np.ndarray:
        """(n, P) error + lambda * cost: computed as the router's own route computes it, so floats agree."""
        return self.error + self.lam_cost

    @functools.cached_property  # the decision and its summary both read it: one sort per batch
    def order(self) -> np.ndarray:
        """(n, P) candidate positions, best (the chosen model) first."""
        return ranked_order(self.total, self.costs, self.candidates)

    def chosen(self) -> np.ndarray:
        """(n,) router index of the chosen model: rank 1."""
        return self.candidates[self.order[:, 0]]

    def summary(self, served: np.ndarray | None = None) -> pd.DataFrame:
        """Per prompt: model (chosen), fallbacks (the other candidates, best first), expected_score (1 - its
        expected error, the score convention of the routing tables) and expected_cost (its cost per query, in the
        router's cost unit: not normalised, so a day's decisions sum to its expected spend). served (n,) router
        indices: the models actually served where exploration drew another than the chosen one; such a row
        describes the served model, its fall-backs the other candidates in rank order."""
        import pandas as pd  # here: one routed prompt needs no frame (summary_columns); pandas is most of its start

        return pd.DataFrame(self.summary_columns(served))

    def summary_columns(self, served: np.ndarray | None = None) -> dict[str, np.ndarray | list[list[str]]]:
        """The columns of summary as arrays (model, expected_score, expected_cost) and lists (fallbacks), for a
        caller that builds its own frame: a served request spends no frame on them."""
        order = self.order
        rows = np.arange(order.shape[0])
        names = np.asarray(self.models, dtype=object)
        best = order[:, 0]
        fallbacks = fallback_lists(names, order)
        if served is not None:
            picked = np.searchsorted(self.candidates, served)  # candidates are sorted router indices
            for i in np.flatnonzero(picked != best):
                fallbacks[i] = [names[p] for p in order[i] if p != picked[i]]
            best = picked
        return {
            "model": names[best],
            "fallbacks": fallbacks,
            "expected_score": 1.0 - self.error[rows, best],
            "expected_cost": self.costs[best],
        }

    def explained(self, latency: Mapping[str, float] | None = None) -> list[list[dict]]:
        """Per prompt, one record per candidate in rank order with EXPLAIN_COLUMNS (intervals None when not kept;
        latency_s the model's recorded median latency in seconds, None when none is recorded: a latency cap
        compares it, it never enters the total)."""
        latency = latency or {}
        order, total, lam_cost = self.order, self.total, self.lam_cost
        out = []
        for i, positions in enumerate(order):
            out.append([{
                "rank": r, "model": self.models[p], "expected_error": float(self.error[i, p]),
                "error_lo": None if self.error_lo is None else float(self.error_lo[i, p]),
                "error_hi": None if self.error_hi is None else float(self.error_hi[i, p]),
                "cost": float(self.costs[p]), "lam_cost": float(lam_cost[p]), "total": float(total[i, p]),
                "latency_s": latency.get(self.models[p]),
            } for r, p in enumerate(positions, start=1)])
        return out
