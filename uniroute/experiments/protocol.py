"""The dynamic-pool protocol (DESIGN.md section 4): what to evaluate, and the seeded LLM and prompt split of a trial."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from uniroute.experiments.methods import DEFAULT_METHODS, METHODS
from uniroute.selection.data import RoutingData
from uniroute.selection.onboarding_order import STRATEGIES
from uniroute.selection.split import TrialSplit

log = logging.getLogger(__name__)

STUDY_STRATEGIES = (*STRATEGIES, "adaptive", "adaptive_shared")  # the study only (experiments/adaptive_study.py)

@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate and how; plain values so that it pickles to Dask workers."""

    seed: int = 0
    methods: tuple[str, ...] = DEFAULT_METHODS
    val_sizes: tuple[int, ...] = ()  # validation-size study: sizes below the full validation set
    val_selections: tuple[str, ...] = ()  # onboarding-set strategies the study compares with random at each size
    battles_per_prompt: int = 1  # `pairwise`: disjoint arena-style battles drawn per prompt (1: arena-sparse)
    train_frac: float = 0.6
    val_frac: float = 0.1
    n_lambdas: int = 256
    learned_map_epochs: int = 5
    oracle_epochs: int = 10  # paper: 30; see oracle_curve
    oracle_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.methods) - set(METHODS))
        if unknown:
            raise ValueError(f"unknown methods {unknown}; choose from {list(METHODS)}")
        if not self.methods:
            raise ValueError("no methods to evaluate")
        if not (self.train_frac > 0 and self.val_frac > 0 and self.train_frac + self.val_frac < 1):
            raise ValueError(f"bad split fractions train={self.train_frac} val={self.val_frac}")
        if self.battles_per_prompt < 1:
            raise ValueError(f"battles per prompt must be >= 1, got {self.battles_per_prompt}")
        if any(s < 2 for s in self.val_sizes):
            raise ValueError(f"validation sizes must be >= 2, got {list(self.val_sizes)}")
        unknown = sorted(set(self.val_selections) - set(STUDY_STRATEGIES))
        if unknown:
            raise ValueError(f"unknown validation selections {unknown}; choose from {', '.join(STUDY_STRATEGIES)}")
        if set(self.val_selections) - {"random"} and not self.val_sizes:
            raise ValueError("a validation selection chooses the first N validation prompts: give the sizes N "
                             "too (--val-sizes)")


def trial_split(data: RoutingData, seed: int, trial: int, train_frac: float = 0.6, val_frac: float = 0.1) -> TrialSplit:
    """The seeded LLM split (2/3 train; half when fewer than 12 LLMs) and 60/10/30 prompt split of one trial."""
    rng = np.random.default_rng([seed, trial])
    m = len(data.models)
    n_train_models = m // 2 if m < 12 else round(2 * m / 3)
    model_perm = rng.permutation(m)
    n = data.n_prompts
    prompt_perm = rng.permutation(n)
    n_tr, n_val = int(round(train_frac * n)), int(round(val_frac * n))
    fit_seed = int(rng.integers(0, 2**31 - 1))
    test_models = np.sort(model_perm[n_train_models:])
    test = np.sort(prompt_perm[n_tr + n_val :])
    # Test prompts are scored among test LLMs only, so each must have a result from every test LLM
    # (otherwise a routed decision could land on a missing label).
    test = test[~np.isnan(data.scores[np.ix_(test, test_models)]).any(axis=1)]
    return TrialSplit(
        train_models=np.sort(model_perm[:n_train_models]),
        test_models=test_models,
        train=np.sort(prompt_perm[:n_tr]),
        val=prompt_perm[n_tr : n_tr + n_val],  # kept in random order for nested subsamples
        test=test,
        fit_seed=fit_seed,
    )
