"""A small seeded trial for the onboarding-set tests: 300 prompts, 6 LLMs of rising accuracy, the protocol's split."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.selection.data import RoutingData
from uniroute.selection.state import TrialState


def small_trial(config: EvalConfig) -> TrialState:
    rng = np.random.default_rng(1)
    n, m = 300, 6
    X = rng.normal(size=(n, 16)).astype(np.float32)
    scores = (rng.random((n, m)) < np.linspace(0.3, 0.8, m)).astype(float)
    data = RoutingData(tuple(f"llm-{i}" for i in range(m)), scores, np.tile(np.arange(1.0, m + 1), (n, 1)))
    return TrialState(X, data, trial_split(data, seed=0, trial=0), config)


def poisoned(state: TrialState, never: list[np.ndarray]) -> TrialState:
    """The same trial with the labels flipped of each test LLM's prompts in `never` (one array per test LLM)."""
    scores = state.data.scores.copy()
    for rows, model in zip(never, state.split.test_models, strict=True):
        scores[rows, model] = 1.0 - scores[rows, model]
    return TrialState(state.X, replace(state.data, scores=scores), state.split, state.config)
