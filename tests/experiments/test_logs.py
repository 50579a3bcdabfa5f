"""Evaluation protocol and metrics: hand-checked curve fixtures, the sign test, the trial pipeline."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from uniroute.experiments.logs import eval_data_from_frame


# ---- data pivot -------------------------------------------------------------------------------------------
def test_pivot_excludes_costless_models_and_fills_partial_costs() -> None:
    frame = pd.DataFrame(
        {
            "prompt_id": ["p2", "p1", "p1", "p2", "p1", "p2", "p1"],
            "prompt": ["two", "one", "one", "two", "one", "two", "one"],
            "model": ["a", "a", "b", "b", "c", "c", "d"],
            "score": [1.0, 0.0, 1.0, 0.5, 1.0, 0.0, 1.0],
            "cost": [2.0, 4.0, 1.0, None, None, None, 5.0],
        }
    )
    data = eval_data_from_frame(frame)
    assert data.excluded_models == ("c",)
    assert data.routing.models == ("a", "b", "d")
    assert data.prompt_ids == ("p1", "p2") and data.prompts == ("one", "two")
    np.testing.assert_array_equal(data.routing.scores, [[0.0, 1.0, 1.0], [1.0, 0.5, np.nan]])
    np.testing.assert_array_equal(data.routing.costs, [[4.0, 1.0, 5.0], [2.0, 1.0, np.nan]])
    assert data.filled_costs == 1


def test_pivot_rejects_duplicates_and_bad_scores() -> None:
    base = {"prompt_id": ["p", "p"], "prompt": ["x", "x"], "model": ["a", "a"], "cost": [1.0, 1.0]}
    with pytest.raises(ValueError, match="repeat"):
        eval_data_from_frame(pd.DataFrame({**base, "score": [1.0, 0.0]}))
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        eval_data_from_frame(pd.DataFrame({**base, "model": ["a", "b"], "score": [1.5, 0.0]}))
    with pytest.raises(ValueError, match=r"^data row 2: cost 'free' is not a number$"):
        eval_data_from_frame(pd.DataFrame({**base, "model": ["a", "b"], "score": [1.0, 0.0], "cost": [1, "free"]}))


def test_pivot_keeps_one_of_identical_rows() -> None:
    # a log concatenated with itself says nothing new (ingest skips such rows too); only differing ones conflict
    rows = pd.DataFrame({"prompt_id": ["p", "p", "p"], "prompt": "x", "model": ["a", "a", "b"],
                         "score": [1.0, 1.0, 0.0], "cost": [1.0, 1.0, 2.0]})
    data = eval_data_from_frame(rows)
    np.testing.assert_array_equal(data.routing.scores, [[1.0, 0.0]])
