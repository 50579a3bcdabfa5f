"""Psi rows from battles: anchored on pointwise rows, or a pool of pairwise evidence only."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from uniroute.routers.cluster.psi import Psi
from uniroute.routers.cluster.psi_battles import psi_from_battles


def frame(*rows: tuple) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["cluster", "model_a", "model_b", "n", "w"])


def test_a_newcomer_tying_an_anchor_gets_the_anchors_loss() -> None:
    anchor = Psi(("p",), np.array([[0.25, 0.25]]), np.array([[8, 8]]))  # accuracy 3/4: strength log 3
    battles = frame((0, "new", "p", 10, 5.0), (1, "new", "p", 10, 5.0))  # five wins in ten, each cluster
    psi = psi_from_battles(battles, 2, anchors=anchor)
    assert psi.models == ("new",)
    assert psi.values[0] == pytest.approx([0.25, 0.25], abs=2e-3)  # the weak overall ridge pulls a hair to 1/2
    assert psi.counts[0].tolist() == [10, 10]


def test_a_newcomer_is_better_where_it_wins_and_keeps_its_overall_strength_where_it_never_fought() -> None:
    anchors = Psi(("p", "q"), np.array([[0.5, 0.5, 0.5], [0.2, 0.2, 0.2]]), np.array([[5, 5, 5], [5, 5, 5]]))
    battles = frame((0, "new", "p", 20, 18.0), (1, "new", "p", 20, 2.0), (0, "new", "q", 4, 2.0))
    psi = psi_from_battles(battles, 3, anchors=anchors)
    loss = psi.values[0]
    assert loss[0] < 0.5 < loss[1]  # it beat p in cluster 0 and lost to it in cluster 1
    assert loss[0] < loss[2] < loss[1]  # cluster 2: its overall strength, between the two
    assert psi.counts[0].tolist() == [24, 20, 0]


def test_a_pool_without_pointwise_evidence_is_centred_on_its_average_model() -> None:
    psi = psi_from_battles(frame((0, "a", "b", 4, 3.0)), 1)  # a won 3 of 4
    assert psi.models == ("a", "b")
    half = math.log(3) / 2
    assert psi.values[:, 0] == pytest.approx([1 / (1 + math.exp(half)), 1 / (1 + math.exp(-half))], rel=1e-2)


def test_a_newcomer_without_a_battle_against_the_pool_is_refused() -> None:
    anchors = Psi(("p",), np.array([[0.5]]), np.array([[1]]))
    with pytest.raises(ValueError, match=r"models \['new'\] have no battle against a model of the pool"):
        psi_from_battles(frame((0, "new", "stranger", 3, 3.0)), 1, anchors=anchors, free=["new"])
