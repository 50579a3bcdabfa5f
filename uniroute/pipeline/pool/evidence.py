"""Evidence before traffic: how many validation answers a model needs before the router sends it prompts."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from uniroute import store

# Evidence before traffic: a model takes traffic only once it has answered this many validation prompts. With
# three lucky answers a new model's Psi row said error 0.0 on every cluster (empty cells fall back to its own
# mean) and it took 76-100% of the traffic at most budgets. UNIROUTE_MIN_VAL_ANSWERS changes it.
MIN_VAL_ANSWERS = 5


def thin_models(con: store.Connection, models: Sequence[str], min_answers: int) -> dict[str, int]:
    """{model: validation answers} of the models with results on fewer than min_answers validation prompts
    (models with battles only are judged by their battles elsewhere and are not listed)."""
    return thin_among(store.query(con, "model_val_costs"), models, min_answers)


def thin_among(val_costs: pd.DataFrame, models: Sequence[str], min_answers: int) -> dict[str, int]:
    """thin_models on a model_val_costs frame the caller already read (at 1M x 100 that query, battle models
    included, is the build's costly one, and the build needs its costs too)."""
    answers = val_costs.set_index("model")["n"]
    return {m: int(answers[m]) for m in models if m in answers.index and 0 < int(answers[m]) < min_answers}
