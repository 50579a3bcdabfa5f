"""When lambda_path walks distinct rows only (_row_groups): the mutation run (make mutation) showed the choice
itself was untested, since walking every row gives the same events. The rule: group when at least two rows
and one model, and at most GROUP_SHARE of the rows are distinct; rows with equal projections must be equal."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from uniroute.routers.budgets.lambda_path import _row_groups, lambda_path


def test_repeated_rows_are_walked_once():
    gamma = np.array([[0.1, 0.5], [0.4, 0.2], [0.1, 0.5], [0.4, 0.2]])
    first, inverse = _row_groups(gamma)
    assert first.tolist() == [0, 1] and inverse.tolist() == [0, 1, 0, 1]


def test_distinct_rows_are_numbered_in_order_of_first_appearance():
    gamma = np.array([[0.9, 0.0], [0.1, 0.5], [0.9, 0.0], [0.1, 0.5], [0.1, 0.5], [0.9, 0.0]])
    first, inverse = _row_groups(gamma)
    assert first.tolist() == [0, 1] and inverse.tolist() == [0, 1, 0, 1, 1, 0]


def test_two_equal_rows_and_one_model_are_enough_to_group():
    assert _row_groups(np.array([[0.3, 0.3], [0.3, 0.3]]))[0].tolist() == [0]
    first, inverse = _row_groups(np.array([[0.1], [0.2], [0.1], [0.2]]))
    assert first.tolist() == [0, 1] and inverse.tolist() == [0, 1, 0, 1]


def test_one_row_no_model_or_mostly_distinct_rows_are_not_grouped():
    assert _row_groups(np.array([[0.1, 0.2]])) is None
    assert _row_groups(np.zeros((4, 0))) is None
    assert _row_groups(np.array([[0.1, 0.5], [0.4, 0.2], [0.3, 0.3], [0.1, 0.5]])) is None  # 3 of 4 distinct


def test_different_rows_with_equal_projections_are_not_grouped():
    # With weights linspace(1, 2, 3) = (1, 1.5, 2) both rows project to 3, yet they differ.
    a, b = [0.0, 2.0, 0.0], [3.0, 0.0, 0.0]
    assert _row_groups(np.array([a, b, a, b])) is None


def test_no_rows_give_an_empty_path():
    path = lambda_path(np.zeros((0, 3)), np.array([1.0, 2.0, 3.0]))
    assert path.start.shape == path.end.shape == path.lam.shape == (0,)


def test_a_path_is_frozen():
    path = lambda_path(np.array([[0.0, 0.5]]), np.array([2.0, 1.0]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        path.lam = np.zeros(0)
