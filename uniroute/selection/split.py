"""Which LLMs and prompts play which role: the training LLMs tune, the test LLMs are scored (a build or a trial)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TrialSplit:
    """Which LLMs and prompts play which role in one trial (indices into RoutingData)."""

    train_models: np.ndarray  # (M_tr,) sorted
    test_models: np.ndarray  # (M_te,) sorted
    train: np.ndarray  # (n_tr,) prompt indices
    val: np.ndarray  # (n_val,) in a random order: val[:s] is the nested subsample of size s
    test: np.ndarray  # (n_te,) only prompts on which every test LLM has a result
    fit_seed: int


def mean_costs(costs: np.ndarray) -> np.ndarray:
    """(M,) mean per-query cost of each model over the prompts where it has a result; (n, M) in."""
    known = ~np.isnan(costs)
    counts = known.sum(axis=0)
    if (counts == 0).any():
        raise ValueError(f"models {np.nonzero(counts == 0)[0].tolist()} have no result on these prompts")
    return np.where(known, costs, 0.0).sum(axis=0) / counts
