"""lambda_within_cost at its edges: a cap of zero met by a free model, a cap exactly at the start's mean cost,
malformed rows refused in one line, a mix of one prompt. Added where the mutation run (make mutation) found
them untested."""

from __future__ import annotations

import numpy as np
import pytest

from uniroute.routers.cost_cap import check_max_cost, lambda_within_cost

# Two prompts, two models: the dear one (cost 1) is better on both; the free one (cost 0) is worse by 0.4 on both.
ROWS = np.array([[0.5, 0.1], [0.5, 0.1]])
COSTS = np.array([0.0, 1.0])


def test_a_cap_of_zero_is_a_cost_and_a_free_model_meets_it():
    assert check_max_cost(0) == 0.0
    lam = lambda_within_cost(ROWS, COSTS, 0.0)
    assert lam == pytest.approx(0.4) and np.all(np.argmin(ROWS + lam * COSTS, axis=1) == 0)


def test_a_cap_of_zero_on_prompt_costs_is_met_where_every_prompt_switches_to_the_free_model():
    lam = lambda_within_cost(ROWS, COSTS, 0.0, prompt_costs=np.tile(COSTS, (2, 1)))
    assert lam == pytest.approx(0.4)


def test_a_cap_at_the_start_mean_cost_needs_no_lambda_on_prompt_costs_nor_on_costs():
    prompt_costs = np.array([[0.0, 0.75], [0.0, 0.25]])  # the dear model's mean cost over the two prompts: 0.5
    assert lambda_within_cost(ROWS, COSTS, 0.5, prompt_costs=prompt_costs) == 0.0
    assert lambda_within_cost(ROWS, COSTS, 1.0) == 0.0
    free = np.zeros((2, 2))  # nothing costs anything: a cap of zero holds at lambda 0
    assert lambda_within_cost(ROWS, COSTS, 0.0, prompt_costs=free) == 0.0


def test_one_prompt_is_a_mix_and_no_prompt_or_malformed_rows_are_refused_in_one_line():
    assert lambda_within_cost(ROWS[:1], COSTS, 1.0) == 0.0
    with pytest.raises(ValueError, match=r"^no prompts in the mix: cannot turn a max cost into lambda$"):
        lambda_within_cost(np.empty((0, 2)), COSTS, 1.0)
    with pytest.raises(ValueError, match=r"^rows must be \(n, 2\) for 2 candidate costs, not \(2,\)$"):
        lambda_within_cost(ROWS[0], COSTS, 1.0)
    with pytest.raises(ValueError, match=r"^rows must be \(n, 3\) for 3 candidate costs, not \(2, 2\)$"):
        lambda_within_cost(ROWS, np.array([0.0, 1.0, 2.0]), 1.0)
