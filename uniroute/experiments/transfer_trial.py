"""One transfer trial: every method tuned on the training log's validation prompts and scored on the test log's."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from uniroute.experiments.pairwise_transfer import PairwiseTransfer
from uniroute.experiments.protocol import EvalConfig
from uniroute.experiments.transfer import TransferConfig, TransferData, transfer_split
from uniroute.experiments.trial import _single_threaded
from uniroute.routers.baselines.zero import zero_router_curve_points, zero_router_hull
from uniroute.routers.kinds import GridSearch, router_kind
from uniroute.selection.curves import CURVE_GRID, Curve, curve_metrics, routing_curve, upper_envelope
from uniroute.selection.grids import search_record
from uniroute.selection.split import TrialSplit, mean_costs
from uniroute.selection.state import TrialState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TestPool:
    """The shared LLMs on the trial's test prompts, normalised by the priciest router cost C."""

    scores: np.ndarray  # (n_te, M) realised scores
    prompt_costs: np.ndarray  # (n_te, M) realised costs / C
    router_costs: np.ndarray  # (M,) c(m) / C

    def curve(self, gamma: np.ndarray, n_lambdas: int) -> Curve:
        return routing_curve(gamma, self.router_costs, self.scores, self.prompt_costs, n_lambdas)

    def zero_curve(self, losses: np.ndarray) -> Curve:
        """ZeroRouter on estimated overall losses (M,): the hull's mixtures at their test (cost, score)."""

        hull = zero_router_hull(self.router_costs, losses)
        cost, score = zero_router_curve_points(hull, self.prompt_costs.mean(axis=0), self.scores.mean(axis=0))
        return upper_envelope(cost, score)


def test_pool(data: TransferData, split: TrialSplit) -> TestPool:
    """The test pool of a trial; c(m) is fixed (price list, unit) or the mean cost on the validation prompts."""
    c = data.router_costs if data.router_costs is not None else mean_costs(data.routing.costs[split.val])
    norm = float(np.max(c))
    if not norm > 0:
        raise ValueError(f"the most expensive shared LLM has cost {norm}; cannot normalise")
    return TestPool(data.routing.scores[split.test], data.routing.costs[split.test] / norm, c / norm)


def pointwise_method(method: str, state: TrialState, pool: TestPool, n_lambdas: int) -> tuple[Any, Curve]:
    """(tuning record or None, test curve) of a method on a pointwise training log.

    K and k are chosen as in `uniroute evaluate` (candidates: simulated onboarding of the training LLMs on
    n_val training prompts). Every LLM is a training LLM here, so Psi (and K-NN's label table) then come from
    all the train prompts, the rows the paper's transfer experiment routes with.
    """

    n_val = len(state.split.val)
    if method == "zero":
        return None, pool.zero_curve(np.nanmean(state.losses[state.split.val], axis=0))
    tuned = state.tuned(method, n_val)
    record = search_record(cast(GridSearch, tuned.search), tuned.shrinkage)  # a tuned kind has its search
    return record, pool.curve(router_kind(method).gamma_from_training_labels(state, tuned.value), n_lambdas)


def transfer_trial(X: np.ndarray, data: TransferData, trial: int, config: TransferConfig) -> dict[str, Any]:
    """Metrics, chosen hyper-parameters and mean-curve samples of one transfer trial (the shape of trial_result)."""
    from threadpoolctl import threadpool_limits


    _single_threaded()
    started, cpu_started = time.perf_counter(), time.process_time()
    split = transfer_split(data, config, trial)
    pool = test_pool(data, split)
    test_cost = pool.prompt_costs.mean(axis=0)
    test_score = pool.scores.mean(axis=0)
    best = int(np.lexsort((test_cost, -test_score))[0])
    names = list(data.routing.models)
    out: dict[str, Any] = {
        "trial": trial, "train_models": names, "test_models": names, "n_test_prompts": int(split.test.size),
        "n_val_prompts": int(split.val.size), "llm_points": {"cost": test_cost.tolist(), "score": test_score.tolist()},
        "metrics": {}, "tuning": {}, "selection": None, "curve": {}, "seconds": {}, "valsize": {},
    }
    with threadpool_limits(1):
        if data.pairwise:
            runner = PairwiseTransfer(X, data, split, config)
        else:
            state = TrialState(X, data.routing, split, EvalConfig(
                seed=config.seed, methods=config.methods, n_lambdas=config.n_lambdas,
                learned_map_epochs=config.learned_map_epochs))
        for method in config.methods:
            t0 = time.perf_counter()
            if data.pairwise:
                tuning, curve = runner.method(method, pool)
            else:
                tuning, curve = pointwise_method(method, state, pool, config.n_lambdas)
            if tuning is not None:
                out["tuning"][method] = tuning
            out["metrics"][method] = curve_metrics(curve, float(test_score[best]), float(test_cost[best]))
            out["curve"][method] = curve.at(CURVE_GRID).tolist()
            out["seconds"][method] = time.perf_counter() - t0
    out["seconds"]["total"] = time.perf_counter() - started
    out["cpu_seconds"] = time.process_time() - cpu_started
    log.info("transfer trial %d done in %.1f s", trial, out["seconds"]["total"])
    return out
