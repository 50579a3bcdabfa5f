"""A pool of LLMs scored on a set of labelled prompts: what a deferral curve is drawn on.

Shapes: n prompts, P models; scores and prompt_costs (n, P) with no missing entry; router_costs (P,).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from uniroute.selection.curves import Curve, curve_area, routed_matrices, routing_curve

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class LabelledPool:
    """Labelled prompts and costs of one LLM pool on one prompt set, costs normalised by the priciest c(m)."""

    scores: np.ndarray  # (n, P) realised scores
    prompt_costs: np.ndarray  # (n, P) realised costs / C
    router_costs: np.ndarray  # (P,) c(m) / C, the costs the router sees
    norm: float  # C

    @classmethod
    def of(cls, scores: np.ndarray, costs: np.ndarray, router_costs: np.ndarray) -> LabelledPool:
        """The pool from raw scores (n, P), per-prompt costs (n, P) and the router's c(m) (P,), normalised by C."""
        norm = float(np.max(router_costs))
        if norm == 0:
            # Every model of the pool is free (e.g. a trial's one training LLM is self-hosted at cost 0): there
            # is no cost axis to normalise, and the curve is flat at cost 0 (Area = its score there).
            norm = 1.0
        if not norm > 0:
            raise ValueError(f"the most expensive model of the pool has cost {norm}; cannot normalise")
        if np.isnan(scores).any() or np.isnan(costs).any():
            raise ValueError("a pool's prompts must carry a score and a cost from every model")
        return cls(scores=scores, prompt_costs=costs / norm, router_costs=np.asarray(router_costs) / norm, norm=norm)

    @property
    def n(self) -> int:
        """Number of prompts."""
        return int(self.scores.shape[0])

    def curve(self, gamma: np.ndarray, n_lambdas: int = 256) -> Curve:
        """Deferral curve of routing these prompts by gamma (n, P)."""
        return routing_curve(gamma, self.router_costs, self.scores, self.prompt_costs, n_lambdas)

    def area(self, gamma: np.ndarray, n_lambdas: int = 256) -> float:
        """Area of that curve."""
        return curve_area(self.curve(gamma, n_lambdas))

    def matrices(self, gamma: np.ndarray, n_lambdas: int = 256) -> tuple[np.ndarray, np.ndarray]:
        """Per-prompt (score, cost) at each lambda (for bootstrapping the Area over prompts)."""
        return routed_matrices(gamma, self.router_costs, self.scores, self.prompt_costs, n_lambdas)
