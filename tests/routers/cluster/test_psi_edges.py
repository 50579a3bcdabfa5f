"""Psi's edges the mutation run (make mutation) found untested: exact Wilson intervals from published tables,
the sparse threshold, every input check of Psi, psi_from_losses, psi_from_frame and shrunk_values."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from uniroute.routers.cluster.psi import Psi, cell_frame, pool_prior, psi_from_frame, psi_from_losses, shrunk_values


def test_wilson_intervals_match_the_published_values():
    # 95% Wilson score intervals: 2 of 3 -> [0.2077, 0.9385]; 0 of 10 -> [0, 0.2775]; 1 of 2 -> [0.0945, 0.9055].
    frame = cell_frame(("a",), np.array([[2 / 3, 0.0, 0.5]]), np.array([[3, 10, 2]]))
    assert frame.error_lo.tolist() == pytest.approx([0.2077, 0.0, 0.0945], abs=1e-4)
    assert frame.error_hi.tolist() == pytest.approx([0.9385, 0.2775, 0.9055], abs=1e-4)
    assert frame.cluster.tolist() == [0, 1, 2] and frame.n.tolist() == [3, 10, 2]


def test_a_cell_is_sparse_below_ten_prompts():
    frame = cell_frame(("a", "b"), np.full((2, 2), 0.5), np.array([[9, 10], [0, 11]]))
    assert frame["sparse"].tolist() == [True, False, True, False]
    assert frame.model.tolist() == ["a", "a", "b", "b"] and frame.cluster.tolist() == [0, 1, 0, 1]


def test_cell_frame_shrinks_with_the_given_strength():
    values, counts = np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[1, 3], [3, 3]])
    frame = cell_frame(("a", "b"), values, counts, strength=4.0)
    # The pool's loss per cluster: .25 and 0; a's overall .25 against .0625 the pool had where a answered, so its
    # lead 4 / 24 * .1875 = .03125 and its prior .28125, .03125 (routers.cluster.psi.pool_prior);
    # cells (1 * 1 + 4 * .28125) / 5 = .425 and (3 * 0 + 4 * .03125) / 7 = .125 / 7.
    a = frame[frame.model == "a"]
    assert a.shrunk_error.tolist() == pytest.approx([0.425, 0.125 / 7])
    assert a.error.tolist() == [1.0, 0.0]


def test_shrinking_needs_a_finite_strength_and_leans_on_the_prior_without_labels():
    with pytest.raises(ValueError, match="finite and >= 0"):
        shrunk_values(np.array([[0.5]]), np.array([[1]]), float("inf"))
    # nobody has an answer (a router stored without counts): nothing to lean on, the cells stay as they are
    assert shrunk_values(np.array([[0.5, 0.5]]), np.array([[0, 0]]), 1.0).tolist() == [[0.5, 0.5]]
    assert shrunk_values(np.array([[0.5]]), np.array([[0]]), 0.0).tolist() == [[0.5]]  # s = 0: as is


def test_psi_checks_its_shapes_and_names():
    with pytest.raises(ValueError, match="shapes disagree"):
        Psi(("a",), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="shapes disagree"):
        Psi(("a",), np.zeros((1, 2)), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="shapes disagree"):
        Psi(("a", "b"), np.zeros((1, 2)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match=r"duplicate model names: \['a', 'a'\]"):
        Psi(("a", "a"), np.zeros((2, 1)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match=r"non-finite values for models \['b'\]"):
        Psi(("a", "b"), np.array([[0.0, 1.0], [np.inf, 0.0]]), np.ones((2, 2)))
    psi = Psi(["a", "b"], np.array([[0.1, 0.2], [0.3, 0.4]]), np.ones((2, 2)))
    assert psi.models == ("a", "b") and psi.k == 2 and psi.row("b").tolist() == [0.3, 0.4]
    assert not psi.counts.flags.writeable and psi.counts.dtype == np.int64


def test_psi_from_losses_checks_its_inputs():
    with pytest.raises(ValueError, match=r"must be \(n,\) and \(n, M\)"):
        psi_from_losses(np.array([0, 1]), np.zeros(2), 2, ("a",))
    with pytest.raises(ValueError, match=r"must be \(n,\) and \(n, M\)"):
        psi_from_losses(np.array([0, 1, 0]), np.zeros((2, 1)), 2, ("a",))
    with pytest.raises(ValueError, match=r"must be \(n,\) and \(n, M\)"):
        psi_from_losses(np.array([[0, 1]]), np.zeros((1, 1)), 2, ("a",))
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        psi_from_losses(np.array([0]), np.zeros((1, 1)), 0, ("a",))
    with pytest.raises(ValueError, match=r"range \[-1, 0\]"):
        psi_from_losses(np.array([-1, 0]), np.zeros((2, 1)), 2, ("a",))
    with pytest.raises(ValueError, match=r"range \[0, 2\]"):
        psi_from_losses(np.array([0, 2]), np.zeros((2, 1)), 2, ("a",))
    # the largest valid id and k = 1
    psi = psi_from_losses(np.array([0, 1]), np.array([[0.25], [0.75]]), 2, ("a",))
    assert psi.values.tolist() == [[0.25, 0.75]] and psi.counts.tolist() == [[1, 1]]
    assert psi_from_losses(np.array([0, 0]), np.array([[0.25], [0.75]]), 1, ("a",)).values.tolist() == [[0.5]]


def test_an_empty_cell_takes_the_models_overall_mean():
    psi = psi_from_losses(np.array([0, 0, 0]), np.array([[0.0], [1.0], [1.0]]), 2, ("a",))
    assert psi.values.tolist() == [[pytest.approx(2 / 3), pytest.approx(2 / 3)]]
    assert psi.counts.tolist() == [[3, 0]]


def test_psi_from_frame_checks_its_inputs():
    good = pd.DataFrame({"model": ["b", "a"], "cluster": [1, 0], "loss_sum": [1.5, 0.5], "n": [3, 1]})
    with pytest.raises(ValueError, match="k must be >= 1"):
        psi_from_frame(good, 0)
    with pytest.raises(ValueError, match="psi frame is empty"):
        psi_from_frame(good.iloc[:0], 2)
    with pytest.raises(ValueError, match=r"range \[-1, 1\]"):
        psi_from_frame(good.assign(cluster=[1, -1]), 2)
    psi = psi_from_frame(good, 2)
    assert psi.models == ("b", "a")  # order of appearance
    assert psi.values.tolist() == [[0.5, 0.5], [0.5, 0.5]] and psi.counts.tolist() == [[0, 3], [1, 0]]
    # two clusters of one model are not a duplicate
    two = pd.DataFrame({"model": ["a", "a"], "cluster": [0, 1], "loss_sum": [1.0, 0.0], "n": [2, 2]})
    assert psi_from_frame(two, 2).values.tolist() == [[0.5, 0.0]]


def test_psi_copies_what_it_is_given():
    values, counts = np.array([[0.1, 0.2]]), np.array([[1, 2]])
    Psi(("a",), values, counts)
    assert values.flags.writeable and counts.flags.writeable  # the caller's arrays stay the caller's


def test_a_model_without_labels_is_named_before_any_arithmetic():
    losses = np.array([[0.5, np.nan], [0.25, np.nan]])
    with pytest.raises(ValueError, match=r"no labelled prompts at all for models \['b'\]"):
        psi_from_losses(np.array([0, 1]), losses, 2, ("a", "b"))


def test_psi_from_frame_takes_one_cluster_and_refuses_an_id_of_k():
    one = pd.DataFrame({"model": ["a"], "cluster": [0], "loss_sum": [1.5], "n": [3]})
    assert psi_from_frame(one, 1).values.tolist() == [[0.5]]
    with pytest.raises(ValueError, match=r"range \[2, 2\]"):
        psi_from_frame(one.assign(cluster=[2]), 2)


def test_a_cell_of_one_prompt_has_its_own_wilson_interval():
    # 1 of 2 halves in a single prompt (loss 0.5, n = 1): [0.0546, 0.9454], not the empty cell's [0, 1].
    frame = cell_frame(("a",), np.array([[0.5]]), np.array([[1]]))
    assert frame.error_lo.tolist() == pytest.approx([0.0546], abs=1e-4)
    assert frame.error_hi.tolist() == pytest.approx([0.9454], abs=1e-4)


def test_cell_frame_does_not_shrink_by_default():
    # Two models: with one, the pool prior is that model's own cells and any strength leaves them as they are.
    values, counts = np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[1, 3], [3, 3]])
    frame = cell_frame(("a", "b"), values, counts)
    assert frame.shrunk_error.tolist() == frame.error.tolist() == [1.0, 0.0, 0.0, 0.0]


def test_what_an_empty_cell_holds_is_never_read():
    # pool_prior reads only cells with counts > 0: an empty cell may hold anything (NaN here) and changes nothing.
    counts = np.array([[2, 0], [2, 4]])
    nan = np.array([[0.5, np.nan], [0.0, 0.25]])
    zero = np.nan_to_num(nan)
    assert pool_prior(nan, counts).tolist() == pool_prior(zero, counts).tolist()
    assert np.isfinite(pool_prior(nan, counts)).all()
    for strength in (0.0, 2.0):
        assert shrunk_values(nan, counts, strength).tolist() == shrunk_values(zero, counts, strength).tolist()
    # s = 0: the empty cell is the prior, not what it held
    assert shrunk_values(nan, counts, 0.0)[0, 1] == pool_prior(zero, counts)[0, 1]


def test_a_model_of_one_answer_leads_the_pool_by_a_twenty_first_of_its_margin():
    # a answered once (loss 1) in cluster 0, where the pool's loss is 1 / 4: overall 1, seen .25, lead
    # 1 / (1 + 20) * .75 over the pool's 0 in cluster 1, which a never answered.
    values, counts = np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[1, 0], [3, 3]])
    assert pool_prior(values, counts)[0, 1] == pytest.approx(0.75 / 21)


def test_a_cluster_answered_once_is_the_pools_view_of_it():
    # Cluster 0 has a single answer in the pool (a's loss 1): the pool's loss there is 1, not the pool's overall
    # .4. b (overall 0 against the .25 the pool had on cluster 1) leads by 2 / 22 * -.25 there.
    values, counts = np.array([[1.0, 0.5], [0.0, 0.0]]), np.array([[1, 2], [0, 2]])
    assert pool_prior(values, counts)[1, 0] == pytest.approx(1.0 - 0.5 / 22)


def test_a_prior_above_one_is_clipped_to_one():
    # Cluster 1: only a answered, every time wrong (pool 1); a is worse than the pool where it answered (overall 1
    # against seen .75), so pool + lead = 1 + 4 / 24 * .25 > 1, and a loss is at most 1.
    values, counts = np.array([[1.0, 1.0], [0.0, 0.0]]), np.array([[2, 2], [2, 0]])
    prior = pool_prior(values, counts)
    assert prior[0, 1] == 1.0 and prior.max() <= 1.0


def test_a_cell_of_all_losses_has_an_upper_bound_of_exactly_one():
    # For a mean loss of 1, centre + half is 1 in exact arithmetic but a ulp above it in floats for some n
    # (5, 19, 23, ...): the upper bound is clipped to 1.
    frame = cell_frame(("a",), np.ones((1, 3)), np.array([[5, 19, 23]]))
    assert frame.error_hi.tolist() == [1.0, 1.0, 1.0]


def test_the_fallback_log_counts_the_empty_cells(caplog):
    # Two answers per answered cell, so that counting the cells of one answer (or the answered ones) tells apart.
    losses = np.array([[0.5, 1.0], [0.0, 0.25], [1.0, 0.0], [0.5, 0.5]])
    with caplog.at_level(logging.INFO, logger="uniroute.routers.cluster.psi"):
        psi_from_losses(np.array([0, 0, 1, 1]), losses, 3, ("a", "b"))  # cluster 2: nobody; 2 of 6 cells empty
    assert "Psi: 2 of 6 cells have no labelled prompt" in caplog.text
