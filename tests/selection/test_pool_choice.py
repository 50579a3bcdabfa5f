"""`auto` at equal costs re-decides between the kind chosen on training and the quality-only rule by cross-validation
on the served pool's validation answers (selection.pool_choice); with costs it returns the selection untouched."""

from __future__ import annotations

from functools import cache

import numpy as np

from tests.synthetic_logs import synthetic_embeddings, synthetic_long
from uniroute.experiments.logs import eval_data_from_frame
from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.experiments.quality import unit_cost_data
from uniroute.routers.kinds import kind_names, router_kind
from uniroute.routers.quality_rule.kind import QUALITY_RULE
from uniroute.selection import pool_choice
from uniroute.selection.pool_choice import choose_on_pool, pool_cv
from uniroute.selection.selection import select_kind
from uniroute.selection.state import TrialState

CONFIG = EvalConfig(seed=0, val_frac=0.3)


@cache
def _state(equal: bool) -> TrialState:
    frame = synthetic_long(n_prompts=600)
    data = unit_cost_data(frame) if equal else eval_data_from_frame(frame)
    split = trial_split(data.routing, CONFIG.seed, 0, CONFIG.train_frac, CONFIG.val_frac)
    return TrialState(synthetic_embeddings(data), data.routing, split, CONFIG)


def _trained_selection(state: TrialState):
    """select_kind's choice on the training LLMs among auto's kinds, before any pool decision."""
    n = len(state.split.val)
    cands = [state.tuned(k, n) for k in kind_names() if router_kind(k).applies_to(state.fits.data)]
    return select_kind(state.fits, cands, n)


def _noise_pool(state: TrialState, models: int = 4) -> np.ndarray:
    """(n_val, models) losses where model 0 is best everywhere (0.3 vs 0.4 error) and nothing else is real: every
    per-cluster "win" of another model is noise, which the per-cluster argmin follows and the rule does not."""
    n = len(state.split.val)
    rng = np.random.default_rng(5)
    rate = np.array([0.3] + [0.4] * (models - 1))
    return (rng.random((n, models)) < rate).astype(np.float64)


def test_with_costs_the_selection_is_select_kinds_untouched() -> None:
    """Bit-identical with costs: the served kind and every recorded figure are select_kind's, nothing re-decided."""
    state = _state(equal=False)
    trained = _trained_selection(state)
    served = state.selection(len(state.split.val))
    assert served.pool_cv is None and QUALITY_RULE.name not in [t.kind for t in served.candidates]
    assert served == trained
    n = len(state.split.val)
    losses = _noise_pool(state, 3)
    same = choose_on_pool(trained, state.fits, ["a", "b", "c"], losses, np.ones(3), [str(i) for i in range(n)])
    assert same is trained


def test_equal_training_costs_but_a_pool_at_different_costs_is_not_re_decided() -> None:
    state = _state(equal=True)
    trained = _trained_selection(state)
    n = len(state.split.val)
    costs = np.array([1.0, 2.0, 1.0, 1.0])
    out = choose_on_pool(trained, state.fits, list("abcd"), _noise_pool(state), costs, [str(i) for i in range(n)])
    assert out is trained


def test_at_equal_costs_the_rule_is_served_where_the_pool_shows_cluster_wins_are_noise() -> None:
    state = _state(equal=True)
    trained = _trained_selection(state)
    assert trained.chosen != QUALITY_RULE.name  # the training pool's topic specialists: K-means stays the choice
    n = len(state.split.val)
    ids = [str(i) for i in range(n)]
    out = choose_on_pool(trained, state.fits, list("abcd"), _noise_pool(state), np.ones(4), ids)
    cv = out.pool_cv
    assert cv is not None and cv.base == trained.chosen and cv.n == n
    assert cv.score[QUALITY_RULE.name] - cv.score[trained.chosen] > pool_choice.Z_POOL * cv.diff_se[QUALITY_RULE.name]
    assert out.chosen == QUALITY_RULE.name
    # Everything else is select_kind's as measured on training.
    assert out.area == trained.area and out.candidates == trained.candidates
    assert "pool's validation answers" in out.line()


def test_the_rule_must_lead_by_the_stated_margin(monkeypatch) -> None:
    state = _state(equal=True)
    trained = _trained_selection(state)
    n = len(state.split.val)
    monkeypatch.setattr(pool_choice, "Z_POOL", 1e6)
    out = choose_on_pool(trained, state.fits, list("abcd"), _noise_pool(state), np.ones(4), [str(i) for i in range(n)])
    assert out.chosen == trained.chosen and out.pool_cv is not None


def test_each_fold_is_routed_by_a_router_that_never_saw_its_answers() -> None:
    """Model b is right on every prompt of fold 0 and on 10% of the others; model a on 25% of all. A fold-0 router
    fitted on the other folds sees b at 0.9 error and routes fold 0 to a (score ~0.25); one that had seen fold 0
    would see b at 0.72 and route it to b (score 1): the fold-0 prompts' CV score tells which happened."""
    state = _state(equal=True)
    trained = _trained_selection(state)
    n = len(state.split.val)
    fold0 = np.random.default_rng([state.fits.data.seed, n, 29]).permutation(n) % pool_choice.FOLDS == 0
    rng = np.random.default_rng(3)
    right_a = rng.random(n) < 0.25
    right_b = fold0 | (rng.random(n) < 0.1)
    losses = np.stack([~right_a, ~right_b], axis=1).astype(np.float64)
    by_kind = {t.kind: t for t in trained.candidates}
    cands = [by_kind[trained.chosen], by_kind[QUALITY_RULE.name]]
    ids = [str(i) for i in range(n)]
    cv = pool_cv(state.fits, cands, trained.chosen, ["a", "b"], losses, np.ones(2), ids)
    assert cv.n == n
    for kind, scores in cv.prompt_scores.items():
        assert scores[fold0].mean() < 0.5, (kind, scores[fold0].mean())


def test_the_evaluation_records_the_pool_decision_at_equal_costs() -> None:
    state = _state(equal=True)
    served = state.selection(len(state.split.val))
    assert served.pool_cv is not None and served.pool_cv.n == len(state.split.val)
    cv = served.pool_cv
    lead = cv.score[QUALITY_RULE.name] - cv.score[cv.base]
    assert (served.chosen == QUALITY_RULE.name) == (lead > pool_choice.Z_POOL * cv.diff_se[QUALITY_RULE.name])
