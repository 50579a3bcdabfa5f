"""Evaluation protocol and metrics: hand-checked curve fixtures, the sign test, the trial pipeline."""

from __future__ import annotations

import numpy as np

from uniroute.experiments.protocol import trial_split
from uniroute.selection.data import RoutingData


# ---- trial split --------------------------------------------------------------------------------------------
def test_trial_split_sizes_roles_and_seeding() -> None:
    rng = np.random.default_rng(0)
    n, m = 200, 7
    scores = (rng.random((n, m)) > 0.5).astype(float)
    scores[:20, 0] = np.nan  # model 0 misses 20 prompts
    costs = np.where(np.isnan(scores), np.nan, 1.0)
    data = RoutingData(models=tuple(f"m{i}" for i in range(m)), scores=scores, costs=costs)
    s = trial_split(data, seed=0, trial=1)
    assert len(s.train_models) == 3 and len(s.test_models) == 4  # fewer than 12 LLMs: half (rounded down)
    assert set(s.train_models) | set(s.test_models) == set(range(m))
    assert len(s.train) == 120 and len(s.val) == 20
    assert not set(s.train) & set(s.val) and not set(s.test) & (set(s.train) | set(s.val))
    assert not np.isnan(scores[np.ix_(s.test, s.test_models)]).any()
    again = trial_split(data, seed=0, trial=1)
    assert np.array_equal(again.val, s.val) and again.fit_seed == s.fit_seed
    assert not np.array_equal(trial_split(data, seed=0, trial=2).val, s.val)
    big = RoutingData(models=tuple(f"m{i}" for i in range(12)), scores=np.zeros((10, 12)), costs=np.ones((10, 12)))
    assert len(trial_split(big, 0, 0).train_models) == 8
