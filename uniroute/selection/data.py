"""The build's and the trials' data: (N, M) score and cost matrices of the evaluated models, and the prompts.

Shapes: N prompts, M models; scores and costs (N, M) float64 with NaN where a model has no result."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class RoutingData:
    """Score and cost matrices of the evaluated models (the part of the data that trials need)."""

    models: tuple[str, ...]
    scores: np.ndarray  # (N, M) float64 in [0, 1], NaN = no result
    costs: np.ndarray  # (N, M) float64 >= 0, NaN exactly where scores is NaN

    def __post_init__(self) -> None:
        if self.scores.shape != self.costs.shape or self.scores.shape[1] != len(self.models):
            raise ValueError(
                f"scores {self.scores.shape} and costs {self.costs.shape} must be (N, {len(self.models)})"
            )
        if not np.array_equal(np.isnan(self.scores), np.isnan(self.costs)):
            raise ValueError("costs must be NaN exactly where scores are NaN")

    @property
    def n_prompts(self) -> int:
        """Number of prompts N."""
        return int(self.scores.shape[0])


@dataclass(frozen=True, eq=False)
class EvalData:
    """A long-format log pivoted to matrices, plus the prompt texts to embed."""

    prompt_ids: tuple[str, ...]  # (N,)
    prompts: tuple[str, ...]  # (N,) prompt text
    routing: RoutingData
    excluded_models: tuple[str, ...]  # models left out because none of their results has a cost
    filled_costs: int  # result rows whose null cost was filled with the model's mean cost
