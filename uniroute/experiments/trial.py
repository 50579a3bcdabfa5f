"""One trial: every method's tuned test curve and metrics, and the validation-size study."""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any, cast

import numpy as np

from uniroute.experiments.methods import KIND_METHODS, QUALITY_RULES, VAL_SIZE_METHODS
from uniroute.experiments.onboarding_study import selection_study, study_methods
from uniroute.experiments.oracle_curve import oracle_curve
from uniroute.experiments.pairwise_protocol import pairwise_method
from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.experiments.quality import quality_rule_curve
from uniroute.routers.kinds import GridSearch, router_kind
from uniroute.selection.curves import CURVE_GRID, Curve, curve_area, curve_metrics
from uniroute.selection.data import RoutingData
from uniroute.selection.scored_pool import LabelledPool
from uniroute.selection.state import TrialState

log = logging.getLogger(__name__)

SINGLE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def _single_threaded() -> None:
    """Pin numeric libraries to one thread in this process (workers share two cores)."""
    for key, value in SINGLE_THREAD_ENV.items():
        os.environ.setdefault(key, value)
    torch = sys.modules.get("torch")  # only if something else imported it: no trial method needs torch
    if torch is not None:
        torch.set_num_threads(1)


def _tuning_record(state: TrialState, kind: str, n_val: int, areas: bool = True) -> dict[str, Any]:
    """The chosen value, where it sits on the ladder, and (areas) the validation Area of every searched value."""
    t = state.tuned(kind, n_val)
    search = cast(GridSearch, t.search)  # a tuned kind has its search
    out: dict[str, Any] = {"value": t.value, "shrinkage": t.shrinkage, "at_edge": search.at_edge,
                           "at_bound": search.at_bound}
    if areas:
        out.update(areas={str(v): a for v, a in search.areas.items()},
                   strengths={f"{s:g}": a for s, a in t.strengths.items()})
        out.update(router_kind(kind).test_record(state, t, n_val))
    return out


def _selection_record(state: TrialState, n_val: int) -> dict[str, Any]:
    sel = state.selection(n_val)
    return {"kind": sel.chosen, "default": sel.default, "val_area": sel.area, "val_area_se": sel.area_se,
            "diff_se": sel.diff_se, "p_best": sel.p_best, "pair_se": sel.pair_se,
            **({} if sel.pool_cv is None else {"pool_cv": {"score": sel.pool_cv.score, "diff_se": sel.pool_cv.diff_se,
                                                           "base": sel.pool_cv.base, "n": sel.pool_cv.n}})}


def method_curve(state: TrialState, method: str, n_val: int, pool: LabelledPool) -> Curve:
    """The test curve of an admissible method (a kind, or auto) onboarded on the first n_val validation prompts."""
    kind = state.selection(n_val).chosen if method == "auto" else method
    return state.kind_curve(state.tuned(kind, n_val), n_val, pool)


def _sparsest(data: RoutingData, models: np.ndarray) -> str:
    """Which of these LLMs has results on the fewest prompts, as advice for the user."""
    counts = (~np.isnan(data.scores[:, models])).sum(axis=0)
    i = int(np.argmin(counts))
    return (f"model {data.models[models[i]]!r} has results on only {counts[i]} of {data.n_prompts} prompts "
            "(leave it out of the file, or add its missing results)")


def trial_result(X: np.ndarray, data: RoutingData, trial: int, config: EvalConfig) -> dict[str, Any]:
    """Metrics, chosen hyper-parameters and kinds, mean-curve samples and validation-size Areas of one trial."""
    from threadpoolctl import threadpool_limits

    _single_threaded()
    started, cpu_started = time.perf_counter(), time.process_time()
    split = trial_split(data, config.seed, trial, config.train_frac, config.val_frac)
    if split.test.size == 0:
        raise ValueError(f"trial {trial}: no test prompt has a result from every test LLM; "
                         f"{_sparsest(data, split.test_models)}")
    state = TrialState(X, data, split, config)
    n_val = len(split.val)
    pool = state.test_pool(n_val)
    test_cost = pool.prompt_costs.mean(axis=0)  # (M_te,) normalised test cost of each test LLM
    test_score = pool.scores.mean(axis=0)
    best = int(np.lexsort((test_cost, -test_score))[0])  # best test score; ties: the cheaper
    out: dict[str, Any] = {
        "trial": trial,
        "train_models": [data.models[i] for i in split.train_models],
        "test_models": [data.models[i] for i in split.test_models],
        "n_test_prompts": int(split.test.size),
        "n_val_prompts": n_val,
        "llm_points": {"cost": test_cost.tolist(), "score": test_score.tolist()},
        "metrics": {}, "tuning": {}, "selection": None, "curve": {}, "seconds": {}, "valsize": {},
    }
    with threadpool_limits(1):
        for method in config.methods:
            t0 = time.perf_counter()
            if method == "zero":
                curve = state.zero_curve(n_val, pool)
            elif method in KIND_METHODS or method == "auto":
                curve = method_curve(state, method, n_val, pool)
                if method == "auto":
                    out["selection"] = _selection_record(state, n_val)
                else:
                    out["tuning"][method] = _tuning_record(state, method, n_val)
            elif method == "pairwise":
                out["tuning"][method], curve = pairwise_method(state, n_val, pool)
            elif method in QUALITY_RULES:
                out["tuning"][method], curve = quality_rule_curve(state, n_val, pool, bonferroni=False)
            else:
                curve = oracle_curve(state, method, pool, config)
            out["metrics"][method] = curve_metrics(curve, float(test_score[best]), float(test_cost[best]))
            out["curve"][method] = curve.at(CURVE_GRID).tolist()
            out["seconds"][method] = time.perf_counter() - t0
        # Validation-size study: nested subsamples val[:s] of the same trial; tuning and selection re-run per size.
        t0 = time.perf_counter()
        for size in config.val_sizes:
            if size >= n_val:
                continue
            sub_pool = state.test_pool(size)
            entry: dict[str, Any] = {"area": {}, "chosen": {}}
            for method in (m for m in VAL_SIZE_METHODS if m in config.methods):
                entry["area"][method] = curve_area(method_curve(state, method, size, sub_pool))
                entry["chosen"][method] = (state.selection(size).chosen if method == "auto"
                                           else _tuning_record(state, method, size, areas=False))
            if "auto" in entry["area"]:
                entry["selection"] = _selection_record(state, size)
            out["valsize"][str(size)] = entry
        out["seconds"]["valsize"] = time.perf_counter() - t0
        if config.val_selections:  # the same study with the first N validation prompts chosen, not random
            t0 = time.perf_counter()
            out["valsize_selection"] = selection_study(state, config, study_methods(config))
            out["seconds"]["valsize_selection"] = time.perf_counter() - t0
    out["seconds"]["total"] = time.perf_counter() - started
    out["cpu_seconds"] = time.process_time() - cpu_started  # moves less with the load of the shared cores
    log.info("trial %d done in %.1f s", trial, out["seconds"]["total"])
    return out
