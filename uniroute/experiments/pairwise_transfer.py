"""The routers of a transfer trial whose training log is pairwise: Bradley-Terry instead of mean losses.

`kmeans`: per-cluster Bradley-Terry strengths on the train prompts' battles (paper: the Chatbot Arena
experiment), Psi = 1 - quality; `zero`: ZeroRouter on the overall strengths (one cluster); `knn`: strengths
fitted on the battles of each prompt's k nearest train prompts (each neighbourhood a "cluster", with the same
ridge toward the overall strength, fitted on every training battle). K and k, and the ridge
(evaluation.pairwise.PRIORS), maximise the mean log-likelihood of the validation battles.

Shapes: M shared LLMs; neighbourhood counts are (Q, M, M) for Q query prompts, built in blocks of queries.
"""

from __future__ import annotations

import logging
from typing import Any, cast

import numpy as np

from uniroute.experiments.pairwise_protocol import PRIORS, Battles, best_prior
from uniroute.experiments.transfer import TransferConfig, TransferData
from uniroute.routers.cluster.bradley_terry import BattleCounts, battle_counts, fit_strengths, log_likelihood
from uniroute.routers.cluster.kmeans import fit_centroids
from uniroute.routers.kinds import GridSearch, cluster_ladder, kind_names, neighbour_ladder, router_kind
from uniroute.routers.knn.neighbours import nearest_order
from uniroute.selection.candidates import MAX_RUNGS
from uniroute.selection.curves import Curve
from uniroute.selection.grids import search_record, widening_search
from uniroute.selection.split import TrialSplit

log = logging.getLogger(__name__)

QUERY_BLOCK = 1024  # query prompts per neighbourhood fit: (block, M, M) arrays stay tens of MB


class PairwiseTransfer:
    """One trial's pairwise routers (K-means fits cached per K)."""

    def __init__(self, X: np.ndarray, data: TransferData, split: TrialSplit, config: TransferConfig) -> None:
        self.X, self.data, self.split, self.config = X, data, split, config
        self.names = list(data.routing.models)
        role = np.full(data.n_prompts, -1)
        role[split.train], role[split.val] = 0, 1
        battles = cast(Battles, data.battles)  # a pairwise log: it has battles
        self.train = battles.subset(role[battles.prompt] == 0)
        self.val = battles.subset(role[battles.prompt] == 1)
        self._centroids: dict[int, Any] = {}
        self._priors: dict[int, float] = {}  # the ridge chosen with each candidate K or k
        # Every training battle in one cluster: the overall strengths (ZeroRouter's, and K-NN's ridge centre).
        self.overall = fit_strengths(self._counts(self.train, np.zeros(len(self.train.a), dtype=np.int64), 1))

    def _counts(self, battles: Battles, cluster: np.ndarray, k: int) -> BattleCounts:
        return battle_counts(battles.a, battles.b, battles.y, cluster, k, self.names)

    def centroids(self, k: int) -> Any:

        if k not in self._centroids:
            self._centroids[k] = fit_centroids(self.X[self.split.train], k, seed=self.split.fit_seed)
        return self._centroids[k]

    def method(self, name: str, pool) -> tuple[dict[str, Any] | None, Curve]:
        """(tuning record with the validation log-likelihood per searched K or k, or None; test curve) of one
        method. K and k climb the ladders of grids.py until the likelihood turns down (grids.widening_search)."""
        n_lambdas = self.config.n_lambdas
        n_val, n_train = len(self.split.val), len(self.split.train)
        if name == "zero":
            return None, pool.zero_curve(1.0 - self.overall.quality()[:, 0])
        variant = router_kind(name).pairwise_variant if name in kind_names() else None
        if variant == "clusters":
            search = self._tune(cluster_ladder(n_val, n_train), self._kmeans_val_likelihood)
            k = search.chosen
            cents = self.centroids(k)
            fit = fit_strengths(self._counts(self.train, cents.assign(self.X[self.train.prompt]), k),
                                prior=self._priors[k])
            gamma = cents.membership(self.X[self.split.test]).astype(np.float64) @ (1.0 - fit.quality()).T
            return search_record(search, prior=self._priors[k]), pool.curve(gamma, n_lambdas)
        if variant == "neighbours":

            candidates = [c for c in neighbour_ladder(n_val) if c <= n_train][:MAX_RUNGS]
            order = nearest_order(self.X[self.split.val], self.X[self.split.train], max(candidates))
            search = self._tune(candidates, lambda c: self._knn_val_likelihood(order[:, :c], c))
            k = search.chosen
            test_order = nearest_order(self.X[self.split.test], self.X[self.split.train], k)
            curve = pool.curve(1.0 - self._neighbourhood_quality(test_order, self._priors[k]), n_lambdas)
            return search_record(search, prior=self._priors[k]), curve
        raise ValueError(f"method {name!r} has no pairwise variant")

    @staticmethod
    def _tune(candidates: list[int], score) -> GridSearch:
        return widening_search(lambda c: float(score(c)), candidates, max_rungs=MAX_RUNGS)

    def _kmeans_val_likelihood(self, k: int) -> float:
        cents = self.centroids(k)
        train = self._counts(self.train, cents.assign(self.X[self.train.prompt]), k)
        score, self._priors[k] = best_prior(train, self._counts(self.val, cents.assign(self.X[self.val.prompt]), k))
        return score

    def _neighbourhood_counts(self, order: np.ndarray) -> BattleCounts:
        """Counts of each query's neighbourhood: the battles on its nearest train prompts (order indexes
        split.train), as one (Q, M, M) stack."""
        from scipy import sparse

        m = len(self.names)
        n_train = len(self.split.train)
        position = np.full(self.data.n_prompts, -1)
        position[self.split.train] = np.arange(n_train)
        per_prompt = self._counts(self.train, position[self.train.prompt], n_train)  # (n_train, M, M)
        q, k = order.shape
        near = sparse.csr_matrix((np.ones(q * k), (np.repeat(np.arange(q), k), order.ravel())), shape=(q, n_train))
        n = (near @ per_prompt.n.reshape(n_train, m * m)).reshape(q, m, m)
        w = (near @ per_prompt.w.reshape(n_train, m * m)).reshape(q, m, m)
        return BattleCounts(tuple(self.names), n, w)

    def _neighbourhood_quality(self, order: np.ndarray, prior: float) -> np.ndarray:
        """(Q, M) quality of every LLM in each query's neighbourhood."""
        out = np.empty((order.shape[0], len(self.names)))
        for start in range(0, order.shape[0], QUERY_BLOCK):
            fit = fit_strengths(self._neighbourhood_counts(order[start : start + QUERY_BLOCK]), prior=prior,
                                overall=self.overall.overall)
            out[start : start + QUERY_BLOCK] = fit.quality().T
        return out

    def _knn_val_likelihood(self, order: np.ndarray, k: int) -> float:
        """Mean log-likelihood of the validation battles, each under its own prompt's neighbourhood strengths
        (for the best ridge, kept for k)."""
        val_position = np.full(self.data.n_prompts, -1)
        val_position[self.split.val] = np.arange(len(self.split.val))
        totals = dict.fromkeys(PRIORS, 0.0)
        battles = 0
        for start in range(0, order.shape[0], QUERY_BLOCK):
            block = order[start : start + QUERY_BLOCK]
            rows = val_position[self.val.prompt] - start
            here = (rows >= 0) & (rows < len(block))
            held_out = self.val.subset(here)
            if not len(held_out.a):
                continue
            counts = self._counts(held_out, rows[here], len(block))
            neighbourhoods = self._neighbourhood_counts(block)
            for prior in PRIORS:
                fit = fit_strengths(neighbourhoods, prior=prior, overall=self.overall.overall)
                totals[prior] += log_likelihood(fit.theta, counts) * len(held_out.a)
            battles += len(held_out.a)
        if not battles:
            return float("nan")
        self._priors[k] = max(totals, key=lambda p: (totals[p], p))
        return totals[self._priors[k]] / battles
