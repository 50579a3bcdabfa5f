"""Choosing the router kind: never from test prompts or test LLMs, and every kind it can choose is servable."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.synthetic_logs import synthetic_embeddings, synthetic_long
from uniroute.experiments.logs import eval_data_from_frame
from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.routers.kinds import router_kind
from uniroute.selection.candidates import KINDS
from uniroute.selection.selection import model_row, select_kind, served_router
from uniroute.selection.state import TrialState


@pytest.fixture(scope="module")
def trial():
    data = eval_data_from_frame(synthetic_long(n_prompts=400))
    X = synthetic_embeddings(data)
    split = trial_split(data.routing, seed=0, trial=1)
    return data, X, split


def _choices(state: TrialState, n_val: int) -> tuple:
    tuned = tuple((t.kind, t.value, t.shrinkage) for t in (state.tuned(k, n_val) for k in KINDS))
    sel = state.selection(n_val)
    return tuned, sel.chosen, sel.area


@pytest.mark.slow
def test_poisoned_test_labels_change_no_choice(trial) -> None:
    data, X, split = trial
    config = EvalConfig(seed=0)
    n_val = len(split.val)
    before = [_choices(TrialState(X, data.routing, split, config), n) for n in (n_val, 20)]
    # Poison everything the selection must not see: every label on the test prompts, and the test LLMs'
    # labels everywhere but the validation prompts (where they are onboarded, after the choice).
    scores = data.routing.scores.copy()
    rng = np.random.default_rng(5)
    scores[split.test] = rng.random(scores[split.test].shape).round()
    hidden = np.setdiff1d(np.arange(scores.shape[0]), split.val)
    scores[np.ix_(hidden, split.test_models)] = 1.0 - np.nan_to_num(scores[np.ix_(hidden, split.test_models)])
    poisoned = dataclasses.replace(data.routing, scores=scores)
    state = TrialState(X, poisoned, split, config)
    after = [_choices(state, n) for n in (n_val, 20)]
    assert after == before
    # ...while the test Area, which must see them, moves.
    pool_before = TrialState(X, data.routing, split, config)
    kind = before[0][1]
    area = pool_before.kind_curve(pool_before.tuned(kind, n_val), n_val, pool_before.test_pool(n_val))
    area_poisoned = state.kind_curve(state.tuned(kind, n_val), n_val, state.test_pool(n_val))
    assert not np.array_equal(area.score, area_poisoned.score)


def test_selection_reports_every_candidate_with_its_uncertainty(trial) -> None:
    data, X, split = trial
    state = TrialState(X, data.routing, split, EvalConfig(seed=0))
    candidates = [state.tuned(k, len(split.val)) for k in KINDS]
    sel = select_kind(state.fits, candidates, bootstrap=30)
    table = sel.table().set_index("kind")
    assert list(table.index) == list(KINDS) and table.chosen.sum() == 1 and table.chosen[sel.chosen]
    assert sel.default == "kmeans_hier" and table.diff_se[sel.default] == 0.0
    assert (table.val_area_se > 0).all() and table.p_best.sum() == pytest.approx(1.0)
    # Another kind is served only if it beats the default by more than 2 standard errors of the difference.
    beats = table.diff_to_default > 2 * table.diff_se
    assert (sel.chosen == sel.default) == (not beats.any())
    assert sel.chosen in sel.line()
    # With no margin the rule is the plain best Area; with an infinite one, always the default.
    assert select_kind(state.fits, candidates, bootstrap=30, z=0.0).chosen == table.val_area.idxmax()
    assert select_kind(state.fits, candidates, bootstrap=30, z=np.inf).chosen == "kmeans_hier"
    # Without the hierarchy among the candidates (`--kinds`), the kind it refines is the default.
    without = [c for c in candidates if c.kind != "kmeans_hier"]
    assert select_kind(state.fits, without, bootstrap=30, z=np.inf).chosen == "kmeans_shrunk"


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_served_routed_onboarded_retired_and_serialised(trial, kind) -> None:
    from uniroute.routers.serialize import router_from_bytes, router_to_bytes
    from uniroute.routers.tables import routing_tables

    data, X, split = trial
    state = TrialState(X, data.routing, split, EvalConfig(seed=0))
    tuned = state.tuned(kind, len(split.val))
    names = [data.routing.models[i] for i in split.test_models]
    val_losses = state.losses[np.ix_(split.val, split.test_models)]
    costs = np.nanmean(data.routing.costs[np.ix_(split.val, split.test_models)], axis=0)
    ids = [data.prompt_ids[i] for i in split.val]
    quality_only = router_kind(kind).quality_only
    if quality_only:  # the quality-only rule serves pools whose models cost the same
        costs = np.full(len(names), float(costs.mean()))
    router = served_router(state.fits, tuned, "emb", names, val_losses, costs, ids)
    assert router.kind == (kind if tuned.shrinkage or kind != "kmeans_shrunk" else "kmeans")  # s = 0: plain
    if quality_only:  # its evaluation's gamma is 0 for the routed model and 1 + mean loss for the others
        np.testing.assert_array_equal(router.route(state.X_test, 0.0),
                                      np.argmin(state.test_gamma(tuned, len(split.val)), axis=1))
    else:  # the served router estimates exactly what the evaluation scores for this kind
        np.testing.assert_allclose(router.gamma(state.X_test), state.test_gamma(tuned, len(split.val)))
    back = router_from_bytes(router_to_bytes(router))
    np.testing.assert_array_equal(back.route(state.X_test, 0.1), router.route(state.X_test, 0.1))
    # Onboard a newcomer that is right on every validation prompt and cheapest, then retire it.
    row, counts = model_row(router, ids, state.X_val, np.zeros(len(ids)))
    bigger = router.with_model("newcomer", row, float(costs.min()) / 2, counts)
    assert bigger.models[-1] == "newcomer" and set(bigger.route_names(state.X_test, 0.0)) == {"newcomer"}
    assert bigger.without_model("newcomer").models == router.models
    # Budgets and the pyfunc's routing work for every kind, from the router's own validation stand-in.
    lam = bigger.lambda_for_budget(bigger.budget_reference(), 0.5)
    frame = bigger.route_terms(state.X_test[:20], lam).summary()
    assert len(frame) == 20 and set(frame.model) <= set(bigger.models)
    tables = routing_tables(bigger, bigger.models)
    assert len(tables.budgets) > 0 and (len(tables.routes) > 0) == bigger.one_hot
