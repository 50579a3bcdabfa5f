"""One trial: every method's tuned test curve and metrics, and the validation-size study."""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

import numpy as np

from uniroute.evaluation.curves import CURVE_GRID, curve_area, curve_metrics
from uniroute.evaluation.data import RoutingData
from uniroute.evaluation.methods import VAL_SIZE_METHODS
from uniroute.evaluation.pairwise import pairwise_method
from uniroute.evaluation.protocol import EvalConfig, trial_split
from uniroute.evaluation.state import TrialState

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
    # Only if already imported: zero/knn/kmeans-only runs need not pay torch's import time, and the torch
    # trainers (learned_map, baselines) pin their own threads while they train.
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def trial_result(X: np.ndarray, data: RoutingData, trial: int, config: EvalConfig) -> dict[str, Any]:
    """Metrics, chosen hyper-parameters, mean-curve samples and validation-size Areas of one trial."""
    from threadpoolctl import threadpool_limits

    _single_threaded()
    started = time.perf_counter()
    split = trial_split(data, config.seed, trial, config.train_frac, config.val_frac)
    if split.test.size == 0:
        raise ValueError(f"trial {trial}: no test prompt has a result from every test LLM")
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
        "metrics": {}, "chosen": {}, "tuning": {}, "curve": {}, "seconds": {}, "valsize": {},
    }
    with threadpool_limits(1):
        for method in config.methods:
            t0 = time.perf_counter()
            if method == "zero":
                curve = state.zero_curve(n_val, pool)
            elif method == "knn":
                k, areas = state.tune_knn(n_val)
                out["chosen"][method], out["tuning"][method] = k, areas
                curve = state.knn_curve(k, n_val, pool)
            elif method in ("kmeans", "learnedmap"):
                k, areas = state.tune_clusters(method, n_val)
                out["chosen"][method], out["tuning"][method] = k, areas
                curve = state.cluster_curve(method, k, n_val, pool)
            elif method == "pairwise":
                k, out["tuning"][method], curve = pairwise_method(state, n_val, pool)
                out["chosen"][method] = k
            else:
                curve = state.oracle_curve(method, pool)
            out["metrics"][method] = curve_metrics(curve, float(test_score[best]), float(test_cost[best]))
            out["curve"][method] = curve.at(CURVE_GRID).tolist()
            out["seconds"][method] = time.perf_counter() - t0
        # Validation-size study: nested subsamples val[:s] of the same trial; tuning re-run per size.
        t0 = time.perf_counter()
        for size in config.val_sizes:
            if size >= n_val:
                continue
            sub_pool = state.test_pool(size)
            entry: dict[str, Any] = {"area": {}, "chosen": {}}
            for method in (m for m in VAL_SIZE_METHODS if m in config.methods):
                if method == "knn":
                    k, _ = state.tune_knn(size)
                    curve = state.knn_curve(k, size, sub_pool)
                else:
                    k, _ = state.tune_clusters(method, size)
                    curve = state.cluster_curve(method, k, size, sub_pool)
                entry["area"][method] = curve_area(curve)
                entry["chosen"][method] = k
            out["valsize"][str(size)] = entry
        out["seconds"]["valsize"] = time.perf_counter() - t0
    out["seconds"]["total"] = time.perf_counter() - started
    log.info("trial %d done in %.1f s", trial, out["seconds"]["total"])
    return out
