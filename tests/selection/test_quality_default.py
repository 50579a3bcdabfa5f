"""Where every model costs the same, the quality-only rule is the kind the others must beat (selection.default_for):
the served router then answers "does routing beat the best single model?" from the served pool's own answers,
another kind is still served where validation shows it clearly better, and with costs nothing changes."""

from __future__ import annotations

import dataclasses

import pytest

from tests.synthetic_logs import synthetic_embeddings, synthetic_long
from uniroute.experiments.logs import eval_data_from_frame
from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.experiments.quality import unit_cost_data
from uniroute.routers.kind_quality_rule import QUALITY_RULE
from uniroute.selection.selection import select_kind
from uniroute.selection.state import TrialState


@pytest.fixture(scope="module")
def frame():
    return synthetic_long(n_prompts=400)


def _state(data) -> TrialState:
    split = trial_split(data.routing, seed=0, trial=1)
    return TrialState(synthetic_embeddings(data), data.routing, split, EvalConfig(seed=0))


def test_at_equal_costs_the_rule_is_the_default_and_a_clearly_better_kind_is_still_served(frame) -> None:
    state = _state(unit_cost_data(frame))
    n_val = len(state.split.val)
    sel = state.selection(n_val)
    table = sel.table().set_index("kind")
    assert sel.default == QUALITY_RULE.name and table.diff_se[QUALITY_RULE.name] == 0.0
    # The synthetic prompts' clusters have strong specialists: the rule's empirical-Bayes cells follow them as
    # K-means' argmin does (same Area on validation), so nothing beats the rule clearly and it is served.
    assert table.val_area[QUALITY_RULE.name] == table.val_area["kmeans_shrunk"] == table.val_area["kmeans"]
    assert sel.chosen == QUALITY_RULE.name
    candidates = list(sel.candidates)
    assert select_kind(state.fits, candidates, bootstrap=30, z=float("inf")).chosen == QUALITY_RULE.name
    # With every other kind counted as clearly better (a margin of -inf), the best of them is served; of the kinds
    # tied at the best Area, the registry's default (count-aware Psi), not plain K-means by list order.
    assert select_kind(state.fits, candidates, bootstrap=30, z=float("-inf")).chosen == "kmeans_shrunk"


def test_with_costs_the_default_stays_kmeans_even_with_the_rule_among_the_candidates(frame) -> None:
    state = _state(eval_data_from_frame(frame))
    n_val = len(state.split.val)
    assert state.selection(n_val).default == "kmeans_shrunk"
    # Handed the rule anyway (it is no candidate of `auto` with costs), the selection does not make it the default.
    rule = dataclasses.replace(state.tuned(QUALITY_RULE.name, n_val), value=1)
    sel = select_kind(state.fits, [state.tuned("kmeans_shrunk", n_val), rule], bootstrap=30, z=float("inf"))
    assert sel.default == "kmeans_shrunk" and sel.chosen == "kmeans_shrunk"
