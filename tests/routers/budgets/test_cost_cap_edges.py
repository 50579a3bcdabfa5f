"""lambda_within_cost at its edges: a cap of zero met by a free model, a cap exactly at the start's mean cost,
malformed rows refused in one line, a mix of one prompt. Added where the mutation run (make mutation) found
them untested."""

from __future__ import annotations

import numpy as np
import pytest

from uniroute.routers.budgets.cost_cap import check_max_cost, lambda_for_max_cost, lambda_within_cost
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router

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


# Prompt counts whose shares (count / total) sum to an ulp over 1 in floats: the weighted mean of routing every
# prompt to a model of cost 1 is then 1.0000000000000002.
UNEVEN = np.array([6.0, 5.0, 3.0, 3.0, 1.0, 1.0, 1.0, 2.0, 7.0, 6.0])


def test_a_cap_a_hair_below_the_cheapest_cost_is_met_by_the_cheapest_on_any_mix():
    """check_reachable calls a cap within 1e-12 below the cheapest cost met; the search then used to find no lambda
    (the float mean of the cheapest routing lands above such a cap): a RuntimeError on rows, "cannot be met" on a
    router. Found by the mutation run, where both of those guards looked unreachable."""
    shares = UNEVEN / UNEVEN.sum()
    assert float(shares @ np.ones(UNEVEN.size)) > 1.0
    cap = 1.0 * (1 - 1e-12)
    rows = np.tile([0.0, 1.0], (UNEVEN.size, 1))  # the cheap model (cost 1) is the better one: lambda 0 meets it
    assert lambda_within_cost(rows, np.array([1.0, 2.0]), cap, UNEVEN) == 0.0
    dear_first = rows[:, ::-1]  # the dear one is better: only a lambda past the switch routes all to the cheap one
    lam = lambda_within_cost(dear_first, np.array([1.0, 2.0]), cap, UNEVEN)
    assert lam >= 1.0 and np.all(np.argmin(dear_first + lam * np.array([1.0, 2.0]), axis=1) == 0)
    centers = np.eye(UNEVEN.size, dtype=np.float32)
    router = Router("emb", ("cheap", "dear"), np.array([1.0, 2.0]), np.tile([[0.5], [0.1]], (1, UNEVEN.size)),
                    Centroids(centers), None)
    X = np.repeat(centers, UNEVEN.astype(int), axis=0)
    lam = lambda_for_max_cost(router, X, cap)
    assert np.all(router.route(X, lam) == 0)
