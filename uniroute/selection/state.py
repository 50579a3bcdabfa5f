"""Everything one trial's methods share: the tuning fits (candidates), the pools, the test curves of each kind.

The admissible methods are the registered router kinds (routers.kinds), each tuned with the training LLMs on
the first n_val validation prompts and scored among the test LLMs, whose Psi (or K-NN label table) comes from
those same validation prompts; `auto` is the kind selection.select_kind chooses, scored the same way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from uniroute.routers.baselines.zero import zero_router_curve_points, zero_router_hull
from uniroute.routers.kinds import Tuned, kind_names, router_kind
from uniroute.selection.candidates import CandidateFits, TuningData
from uniroute.selection.curves import Curve, upper_envelope
from uniroute.selection.data import RoutingData
from uniroute.selection.pool_choice import choose_on_pool
from uniroute.selection.scored_pool import LabelledPool
from uniroute.selection.selection import Selection, select_kind
from uniroute.selection.split import TrialSplit, mean_costs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StateConfig:
    """How finely curves are drawn and how long the LearnedMap trains (an experiment's EvalConfig has both too)."""

    n_lambdas: int = 256
    learned_map_epochs: int = 5


class TrialState:
    """Everything of one trial that several methods and validation sizes share (fits cached per K)."""

    def __init__(self, X: np.ndarray, data: RoutingData, split: TrialSplit,
                 config: StateConfig | Any = None) -> None:
        config = StateConfig() if config is None else config
        self.X, self.data, self.split, self.config = X, data, split, config
        self.losses = 1.0 - data.scores
        self.X_train, self.X_val, self.X_test = X[split.train], X[split.val], X[split.test]
        tr, val, m = split.train, split.val, split.train_models
        self.train_losses = self.losses[np.ix_(tr, m)]  # (n_tr, M_tr)
        self.fits = CandidateFits(
            TuningData(self.X_train, self.train_losses, data.costs[np.ix_(tr, m)], self.X_val,
                       self.losses[np.ix_(val, m)], data.costs[np.ix_(val, m)], seed=split.fit_seed),
            learned_map_epochs=config.learned_map_epochs,
        )
        self._tuned: dict[tuple[str, int], Tuned] = {}
        self._curves: dict[tuple[str, int, float, int], Curve] = {}
        self._selections: dict[int, Selection] = {}
        self._test_phi: dict[tuple[str, int], np.ndarray] = {}

    # ---- pools ---------------------------------------------------------------------------------------
    def test_pool(self, n_val: int) -> LabelledPool:
        """Test prompts among the test LLMs, with router costs c(m) from the first n_val val prompts."""
        val = self.split.val[:n_val]
        c = mean_costs(self.data.costs[np.ix_(val, self.split.test_models)])
        cols = self.split.test_models
        return LabelledPool.of(self.data.scores[np.ix_(self.split.test, cols)],
                               self.data.costs[np.ix_(self.split.test, cols)], c)

    # ---- tuning and selection ----------------------------------------------------------------------------
    def tuned(self, kind: str, n_val: int) -> Tuned:
        """The kind with hyper-parameters chosen on the first n_val validation prompts (cached)."""
        if (kind, n_val) not in self._tuned:
            self._tuned[(kind, n_val)] = self.fits.tune(kind, n_val)
        return self._tuned[(kind, n_val)]

    def selection(self, n_val: int) -> Selection:
        """`auto`: the kind with the best cross-fitted validation Area among the tuned candidates (cached): every
        registered kind that applies to the data (the quality-only rule only where every LLM costs the same); at
        equal costs re-decided on the test LLMs' validation answers (pool_choice.choose_on_pool)."""
        if n_val not in self._selections:
            cands = [self.tuned(kind, n_val) for kind in kind_names()
                     if router_kind(kind).applies_to(self.fits.data)]
            selection = select_kind(self.fits, cands, n_val)
            # At equal costs, re-decided on the served (test) LLMs' validation answers, as a build does on its pool.
            val = self.split.val[:n_val]
            self._selections[n_val] = choose_on_pool(
                selection, self.fits, self.test_llm_names(), self.test_llm_val_losses(n_val),
                mean_costs(self.data.costs[np.ix_(val, self.split.test_models)]), [str(i) for i in val])
        return self._selections[n_val]

    # ---- test curves ---------------------------------------------------------------------------------------
    def test_onehot(self, k: int) -> np.ndarray:
        """(n_te, K) one-hot K-means clusters (K = k) of the test prompts (cached)."""
        if ("onehot", k) not in self._test_phi:
            self._test_phi[("onehot", k)] = np.eye(k)[self.fits.centroids(k).assign(self.X_test)]
        return self._test_phi[("onehot", k)]

    def test_map_phi(self, k: int) -> np.ndarray:
        """(n_te, K) the LearnedMap's Phi (K = k) of the test prompts (cached)."""
        if ("map", k) not in self._test_phi:
            self._test_phi[("map", k)] = self.fits.learned_map(k).membership(self.X_test).astype(np.float64)
        return self._test_phi[("map", k)]

    def test_llm_names(self) -> list[str]:
        """The test LLMs' names."""
        return [self.data.models[i] for i in self.split.test_models]

    def test_llm_val_losses(self, n_val: int) -> np.ndarray:
        """(n_val, M_te) the test LLMs' losses on the first n_val validation prompts (what onboards them)."""
        return self.losses[np.ix_(self.split.val[:n_val], self.split.test_models)]

    def test_val_sims(self, rows: slice = slice(None)) -> np.ndarray:
        """(these test prompts, n_val) cosine similarity of test prompts to val prompts. Not kept: asked by blocks of
        test prompts (kind_knn.TEST_BLOCK), a build holds one block's instead of 20k x 5k (400 MB, its driver's peak
        at 1M x 100 under the tuning's arrays)."""
        return self.X_test[rows] @ self.X_val.T

    def test_gamma(self, tuned: Tuned, n_val: int) -> np.ndarray:
        """(n_te, M_te) what the served router of `tuned` estimates for the test LLMs (selection.served_router)."""
        return router_kind(tuned.kind).test_gamma(self, tuned, n_val)

    def kind_curve(self, tuned: Tuned, n_val: int, pool: LabelledPool) -> Curve:
        """Test curve of a tuned kind whose test LLMs were onboarded on the first n_val validation prompts."""
        key = (tuned.kind, tuned.value, tuned.shrinkage, n_val)
        if key not in self._curves:
            self._curves[key] = pool.curve(self.test_gamma(tuned, n_val), self.config.n_lambdas)
        return self._curves[key]

    def zero_curve(self, n_val: int, pool: LabelledPool) -> Curve:
        """ZeroRouter: hull of the test LLMs' val (cost, score), mixtures' expected test (cost, score)."""

        val = self.split.val[:n_val]
        val_losses = np.nanmean(self.losses[np.ix_(val, self.split.test_models)], axis=0)
        hull = zero_router_hull(pool.router_costs, val_losses)
        cost, score = zero_router_curve_points(hull, pool.prompt_costs.mean(axis=0), pool.scores.mean(axis=0))
        return upper_envelope(cost, score)

    # ---- shared with the pairwise method (experiments/pairwise_protocol.py) and the kinds (routers.kinds.HeldOutState)
    # -----
    def centroids(self, k: int) -> Any:
        """K-means with K = k on the training prompts."""
        return self.fits.centroids(k)
