"""Everything one trial's methods share: pools, fits cached per K, tuning on validation prompts, test curves."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from uniroute.evaluation.curves import Curve, curve_area, routing_curve, upper_envelope
from uniroute.evaluation.data import RoutingData
from uniroute.evaluation.grids import kmeans_candidates, knn_candidates, learned_map_candidates
from uniroute.evaluation.protocol import EvalConfig, TrialSplit, mean_costs
from uniroute.routers.knn import knn_gammas, nearest_order, top_k_order

log = logging.getLogger(__name__)

@dataclass
class _Pool:
    """Labelled prompts and costs of one LLM pool on one prompt set, normalised for a curve."""

    scores: np.ndarray  # (n, P) realised scores
    prompt_costs: np.ndarray  # (n, P) realised costs / C
    router_costs: np.ndarray  # (P,) c(m) / C, the costs the router sees
    norm: float  # C

    def curve(self, gamma: np.ndarray, n_lambdas: int) -> Curve:
        return routing_curve(gamma, self.router_costs, self.scores, self.prompt_costs, n_lambdas)


def _pool(data: RoutingData, prompts: np.ndarray, models: np.ndarray, c_models: np.ndarray) -> _Pool:
    """The pool `models` scored on `prompts` (all labelled), with router costs c_models (from val)."""
    norm = float(c_models.max())
    if not norm > 0:
        raise ValueError(f"the most expensive model of the pool has cost {norm}; cannot normalise")
    return _Pool(
        scores=data.scores[np.ix_(prompts, models)],
        prompt_costs=data.costs[np.ix_(prompts, models)] / norm,
        router_costs=c_models / norm,
        norm=norm,
    )


class TrialState:
    """Everything of one trial that several methods and validation sizes share (fits cached per K)."""

    def __init__(self, X: np.ndarray, data: RoutingData, split: TrialSplit, config: EvalConfig) -> None:
        self.X, self.data, self.split, self.config = X, data, split, config
        self.losses = 1.0 - data.scores
        self.X_train, self.X_test = X[split.train], X[split.test]
        self.X_val = X[split.val]
        self.train_losses = self.losses[np.ix_(split.train, split.train_models)]  # (n_tr, M_tr)
        self._centroids: dict[int, Any] = {}
        self._psi_train: dict[int, np.ndarray] = {}
        self._maps: dict[int, Any] = {}
        self._val_member: dict[tuple[str, int], np.ndarray] = {}
        self._test_member: dict[tuple[str, int], np.ndarray] = {}
        self._val_train_order: np.ndarray | None = None
        self._test_val_sims: np.ndarray | None = None

    # ---- pools ---------------------------------------------------------------------------------------
    def tuning_pool(self, n_val: int) -> tuple[np.ndarray, _Pool]:
        """Positions (into split.val[:n_val]) of val prompts labelled by every train LLM, and their pool."""
        val = self.split.val[:n_val]
        keep = ~np.isnan(self.data.scores[np.ix_(val, self.split.train_models)]).any(axis=1)
        c = mean_costs(self.data.costs[np.ix_(val, self.split.train_models)])
        return np.nonzero(keep)[0], _pool(self.data, val[keep], self.split.train_models, c)

    def test_pool(self, n_val: int) -> _Pool:
        """Test prompts among the test LLMs, with router costs c(m) from the first n_val val prompts."""
        val = self.split.val[:n_val]
        c = mean_costs(self.data.costs[np.ix_(val, self.split.test_models)])
        return _pool(self.data, self.split.test, self.split.test_models, c)

    # ---- cached fits ---------------------------------------------------------------------------------
    def centroids(self, k: int) -> Any:
        from uniroute.routers.kmeans import fit_centroids
        from uniroute.routers.psi import psi_from_losses

        if k not in self._centroids:
            cents = fit_centroids(self.X_train, k, seed=self.split.fit_seed)
            self._centroids[k] = cents
            names = [self.data.models[i] for i in self.split.train_models]
            # Training LLMs' Psi on the training prompts: what tuning routes with (paper appendix).
            self._psi_train[k] = psi_from_losses(cents.assign(self.X_train), self.train_losses, k, names).values
            self._val_member[("kmeans", k)] = cents.membership(self.X_val).astype(np.float64)
            self._test_member[("kmeans", k)] = cents.membership(self.X_test).astype(np.float64)
        return self._centroids[k]

    def learned_map(self, k: int) -> Any:
        from uniroute.routers.learned_map import fit_learned_map

        if k not in self._maps:
            self.centroids(k)
            lmap = fit_learned_map(
                self.X_train, self.train_losses, self._psi_train[k], seed=self.split.fit_seed,
                epochs=self.config.learned_map_epochs,
            )
            self._maps[k] = lmap
            self._val_member[("learnedmap", k)] = lmap.membership(self.X_val).astype(np.float64)
            self._test_member[("learnedmap", k)] = lmap.membership(self.X_test).astype(np.float64)
        return self._maps[k]

    def member(self, method: str, k: int, which: str) -> np.ndarray:
        """(n, K) cluster membership of the val or test prompts under a cached K-means / LearnedMap fit."""
        if method == "kmeans":
            self.centroids(k)
        else:
            self.learned_map(k)
        return (self._val_member if which == "val" else self._test_member)[(method, k)]

    def val_train_order(self, k_max: int) -> np.ndarray:
        """(n_val, k_max) nearest training prompts of every val prompt (for K-NN tuning)."""
        if self._val_train_order is None or self._val_train_order.shape[1] < k_max:
            self._val_train_order = nearest_order(self.X_val, self.X_train, k_max)
        return self._val_train_order

    def test_val_sims(self) -> np.ndarray:
        """(n_te, n_val) cosine similarity of test prompts to val prompts (reused across val sizes)."""
        if self._test_val_sims is None:
            self._test_val_sims = self.X_test @ self.X_val.T
        return self._test_val_sims

    # ---- methods -------------------------------------------------------------------------------------
    def tune_clusters(self, method: str, n_val: int) -> tuple[int, dict[int, float]]:
        """K maximising the val Area of routing among train LLMs (train-prompt Psi), and every candidate's Area."""
        pos, pool = self.tuning_pool(n_val)
        areas = {}
        for k in kmeans_candidates(n_val) if method == "kmeans" else learned_map_candidates(n_val):
            member = self.member(method, k, "val")[pos]
            gamma = member @ self._psi_train[k].T
            areas[k] = curve_area(pool.curve(gamma, self.config.n_lambdas))
        return max(areas, key=lambda k: (areas[k], -k)), areas  # ties: the smaller K

    def cluster_curve(self, method: str, k: int, n_val: int, pool: _Pool) -> Curve:
        """Test curve of K-means / LearnedMap routing: test LLMs' Psi from the val prompts (paper eq. 9)."""
        from uniroute.routers.psi import psi_from_losses

        val = self.split.val[:n_val]
        cents = self.centroids(k)
        names = [self.data.models[i] for i in self.split.test_models]
        # The LearnedMap only changes Phi(x); Psi of a new LLM is its per-cluster val loss on the
        # K-means clusters in both variants (paper section 4.3: Psi does not depend on theta).
        psi = psi_from_losses(
            cents.assign(self.X_val[:n_val]), self.losses[np.ix_(val, self.split.test_models)], k, names
        )
        gamma = self.member(method, k, "test") @ psi.values.T
        return pool.curve(gamma, self.config.n_lambdas)

    def tune_knn(self, n_val: int) -> tuple[int, dict[int, float]]:
        """k maximising the val Area of K-NN over training prompts, routing among train LLMs."""
        ks = knn_candidates(n_val)
        pos, pool = self.tuning_pool(n_val)
        order = self.val_train_order(max(knn_candidates(len(self.split.val))))[:n_val][pos]
        gammas = knn_gammas(order, self.train_losses, ks)
        areas = {k: curve_area(pool.curve(g, self.config.n_lambdas)) for k, g in gammas.items()}
        return max(areas, key=lambda k: (areas[k], -k)), areas

    def knn_curve(self, k: int, n_val: int, pool: _Pool) -> Curve:
        """Test curve of K-NN over the first n_val val prompts with the test LLMs' val labels."""
        kk = min(k, n_val)
        order = top_k_order(self.test_val_sims()[:, :n_val], kk)
        val = self.split.val[:n_val]
        gamma = knn_gammas(order, self.losses[np.ix_(val, self.split.test_models)], [kk])[kk]
        return pool.curve(gamma, self.config.n_lambdas)

    def zero_curve(self, n_val: int, pool: _Pool) -> Curve:
        """ZeroRouter: hull of the test LLMs' val (cost, score), mixtures' expected test (cost, score)."""
        from uniroute.routers.zero import zero_router_curve_points, zero_router_hull

        val = self.split.val[:n_val]
        val_losses = np.nanmean(self.losses[np.ix_(val, self.split.test_models)], axis=0)
        hull = zero_router_hull(pool.router_costs, val_losses)
        cost, score = zero_router_curve_points(hull, pool.prompt_costs.mean(axis=0), pool.scores.mean(axis=0))
        return upper_envelope(cost, score)

    def oracle_curve(self, method: str, pool: _Pool) -> Curve:
        """Clairvoyant MLP / MatFac: trained on train + val prompts with every LLM's labels (upper bound)."""
        from uniroute.routers.oracles import OracleMatFac, OracleMLP

        # 10 epochs instead of the paper's 30 by default (best held-out epoch kept either way): 30 epochs of
        # both oracles took about as long as every admissible method together and would break the 10-minute
        # budget for 100 trials; the oracles are reference upper bounds, not the methods under study.
        fit_rows = np.concatenate([self.split.train, self.split.val])
        cls = OracleMLP if method == "mlp" else OracleMatFac
        oracle = cls(epochs=self.config.oracle_epochs, random_state=self.split.fit_seed, **self.config.oracle_options)
        oracle.fit(self.X[fit_rows], self.losses[fit_rows])
        gamma = oracle.gamma(self.X_test)[:, self.split.test_models]
        return pool.curve(gamma, self.config.n_lambdas)
