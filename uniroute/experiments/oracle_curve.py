"""The clairvoyant oracles' test curves in a trial: upper bounds trained with the test LLMs' labels."""

from __future__ import annotations

from typing import Any

import numpy as np

from uniroute.routers.baselines.oracles import OracleMatFac, OracleMLP
from uniroute.selection.curves import Curve
from uniroute.selection.scored_pool import LabelledPool
from uniroute.selection.state import TrialState


def oracle_curve(state: TrialState, method: str, pool: LabelledPool, config: Any) -> Curve:
    """Clairvoyant MLP / MatFac: trained on train + val prompts with every LLM's labels (upper bound)."""
    # 10 epochs instead of the paper's 30 by default (best held-out epoch kept either way): 30 epochs of
    # both oracles took about as long as every admissible method together; the oracles are reference
    # upper bounds, not the methods under study.
    fit_rows = np.concatenate([state.split.train, state.split.val])
    cls = OracleMLP if method == "mlp" else OracleMatFac
    oracle = cls(epochs=config.oracle_epochs, random_state=state.split.fit_seed, **config.oracle_options)
    oracle.fit(state.X[fit_rows], state.losses[fit_rows])
    gamma = oracle.gamma(state.X_test)[:, state.split.test_models]
    return pool.curve(gamma, config.n_lambdas)
