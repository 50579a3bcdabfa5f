"""A labelled pool: costs normalised by the priciest model's, and a pool of free models."""

from __future__ import annotations

import numpy as np
import pytest

from uniroute.selection.scored_pool import LabelledPool


def test_costs_are_normalised_by_the_priciest_router_cost() -> None:
    pool = LabelledPool.of(np.array([[1.0, 0.0]]), np.array([[2.0, 4.0]]), np.array([2.0, 4.0]))
    assert pool.norm == 4.0 and pool.router_costs.tolist() == [0.5, 1.0] and pool.prompt_costs.tolist() == [[0.5, 1.0]]


def test_a_pool_of_free_models_has_a_flat_curve_not_an_error() -> None:
    # a trial of a 3-LLM log trains on one LLM; when that one is free, there is no cost axis to normalise
    scores = np.array([[1.0, 0.0], [0.0, 1.0]])
    pool = LabelledPool.of(scores, np.zeros((2, 2)), np.zeros(2))
    assert pool.norm == 1.0
    gamma = 1.0 - scores  # a perfect router: each prompt to the model that gets it right
    assert pool.area(gamma) == pytest.approx(1.0)
