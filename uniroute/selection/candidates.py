"""The tuning engine: every registered router kind's hyper-parameters, chosen with the training LLMs only.

The kinds (routers.kinds: `kmeans`, `kmeans_shrunk`, `learnedmap`, `knn` and any registered later) own their
ladders, how they are tuned on them and how a model joins them in a simulated onboarding; `CandidateFits` is the
engine they call back into (routers.kinds.TuningEngine): the shared fits, the samples and the widening search.

How a value is scored (deviation from the paper's appendix, which routes the validation prompts among the
training LLMs with their Psi measured on all training prompts): a new LLM's Psi, or its K-NN label table, comes
from n_val validation prompts, not from thousands of training prompts. Scoring with the well-measured Psi
ignores that noise, so the paper's Area keeps rising with K and needs its cap K <= n_val / 50 (which the chosen
K sat on in most of our trials; without the cap it chose K ~ 12 on RouterBench and lost 0.02 Area), and its
K-NN search finds neighbours six times denser than a new LLM's. Here each value is scored by *simulated
onboarding*: the training LLMs' Psi (or label table) is measured on a random n_val training prompts, exactly as
a new LLM's is on the validation prompts, and the routing Area among the training LLMs is measured on prompts
outside that sample (other training prompts, capped, plus the validation prompts), averaged over REPEATS
samples. K and k climb a ladder until that Area turns down (grids.py). The LearnedMap takes K-means' K.
No test LLM and no test prompt is used.

Shapes: n_tr training and n_val validation prompts, M training LLMs, d embedding dimension.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from uniroute.routers.cluster.kmeans import fit_centroids
from uniroute.routers.cluster.learned_map import fit_learned_map
from uniroute.routers.cluster.psi import psi_from_losses
from uniroute.routers.kinds import GridSearch, Tuned, kind_names, router_kind
from uniroute.routers.knn.neighbours import nearest_order
from uniroute.selection.grids import widening_search
from uniroute.selection.scored_pool import LabelledPool

log = logging.getLogger(__name__)

KINDS = kind_names()  # the built-in kinds (routers.kinds is the registry; a build asks it, not this constant)
REPEATS = 3  # simulated-onboarding samples per scored value
MAX_EVAL_TRAIN = 2000  # training prompts (outside the sample) an Area is measured on, besides the validation ones
MAX_RUNGS = 20  # compute cap on the values searched per kind (K = 1 ... 768, k = 1 ... 8,000)
N_LAMBDAS = 256
PURPOSES = ("tune", "select")


@dataclass(frozen=True, eq=False)
class TuningData:
    """What the hyper-parameters and the router kind are chosen from: the training LLMs' labels and costs."""

    X_train: np.ndarray  # (n_tr, d) float32
    train_losses: np.ndarray  # (n_tr, M) NaN = no result
    train_costs: np.ndarray  # (n_tr, M) realised cost per prompt, NaN exactly where losses are
    X_val: np.ndarray  # (n_val, d) in a random order: the first n are the validation-size study's subsample
    val_losses: np.ndarray  # (n_val, M)
    val_costs: np.ndarray  # (n_val, M)
    seed: int

    def __post_init__(self) -> None:
        n_tr, m = self.train_losses.shape
        if self.X_train.shape[0] != n_tr or self.train_costs.shape != (n_tr, m):
            raise ValueError(f"training arrays disagree: X {self.X_train.shape}, losses {self.train_losses.shape}, "
                             f"costs {self.train_costs.shape}")
        n_val = self.X_val.shape[0]
        if self.val_losses.shape != (n_val, m) or self.val_costs.shape != (n_val, m):
            raise ValueError(f"validation arrays disagree: X {self.X_val.shape}, losses {self.val_losses.shape}, "
                             f"costs {self.val_costs.shape} for {m} training LLMs")
        if n_val < 2 or n_tr < 2:
            raise ValueError(f"need at least 2 training and 2 validation prompts, got {n_tr} and {n_val}")


@dataclass(frozen=True, eq=False)
class Sample:
    """One simulated onboarding: the sampled training prompts and where the Area is measured."""

    sample: np.ndarray  # n_val training prompts whose labels play the validation results
    rest: np.ndarray  # other training prompts (labelled by every training LLM, capped) the Area is measured on
    vrows: np.ndarray  # validation prompts (labelled by every training LLM) the Area is measured on too
    pool: LabelledPool  # the training LLMs on rest, then vrows


def _mean_costs(costs: np.ndarray) -> np.ndarray:
    known = ~np.isnan(costs)
    return np.where(known, costs, 0.0).sum(axis=0) / np.maximum(known.sum(axis=0), 1)


class CandidateFits:
    """Fits shared by every kind, value and validation size (K-means per K, LearnedMap per K), and the tuning."""

    def __init__(self, data: TuningData, learned_map_epochs: int = 5) -> None:
        self.data = data
        self.epochs = learned_map_epochs
        self._centroids: dict[int, Any] = {}
        self._train_cluster: dict[int, np.ndarray] = {}
        self._val_cluster: dict[int, np.ndarray] = {}
        self._maps: dict[int, Any] = {}
        self._val_phi: dict[int, np.ndarray] = {}
        self._samples: dict[tuple[int, str], list[Sample]] = {}
        self._sample_orders: dict[tuple[int, str, int], np.ndarray] = {}
        self._heldout_phi: dict[int, np.ndarray] = {}
        self._tuned: dict[tuple[str, int], Tuned] = {}
        self._psis: dict[tuple[int, int, str, int], Any] = {}
        self._areas: dict[tuple[str, int, int, float], float] = {}
        labelled = ~np.isnan(data.train_losses).any(axis=1)
        self._train_full = np.nonzero(labelled)[0]  # training prompts with every training LLM's label

    # ---- fits ----------------------------------------------------------------------------------------------
    def centroids(self, k: int) -> Any:
        """K-means with K = k on the training prompts (seeded), cached."""

        if k not in self._centroids:
            cents = fit_centroids(self.data.X_train, k, seed=self.data.seed)
            self._centroids[k] = cents
            self._train_cluster[k] = cents.assign(self.data.X_train)
            self._val_cluster[k] = cents.assign(self.data.X_val)
        return self._centroids[k]

    def train_cluster(self, k: int) -> np.ndarray:
        """(n_tr,) cluster of each training prompt."""
        self.centroids(k)
        return self._train_cluster[k]

    def val_cluster(self, k: int) -> np.ndarray:
        """(n_val,) cluster of each validation prompt."""
        self.centroids(k)
        return self._val_cluster[k]

    def psi_train(self, k: int) -> np.ndarray:
        """(M, K) the training LLMs' Psi on all training prompts: what the LearnedMap is fitted against."""
        return psi_from_losses(self.train_cluster(k), self.data.train_losses, k,
                               [str(i) for i in range(self.data.train_losses.shape[1])]).values

    def learned_map(self, k: int) -> Any:
        """The LearnedMap over the K-means clusters with K = k (5 epochs, as the paper), cached."""

        if k not in self._maps:
            self._maps[k] = fit_learned_map(self.data.X_train, self.data.train_losses, self.psi_train(k),
                                            seed=self.data.seed, epochs=self.epochs, clusters=self.centroids(k),
                                            purpose="all training prompts")
            self._val_phi[k] = self._maps[k].membership(self.data.X_val).astype(np.float64)
        return self._maps[k]

    def val_map_phi(self, k: int) -> np.ndarray:
        """(n_val, K) the LearnedMap's Phi of the validation prompts."""
        self.learned_map(k)
        return self._val_phi[k]

    def forget_onboardings(self, purpose: str | None = None) -> None:
        """Drop the simulated onboardings' caches (the samples with their pools, neighbour orders, Psis, held-out Phi):
        what the tuning and the selection measure Areas with. A build scores its held-out prompts after them and
        does not read them again; they were ~0.4 GB of its driver at 200k x 100 (benchmarks/scale/dask_plane.py
        --build). The fits and the Areas stay; anything asked again is recomputed identically (seeded).
        purpose: only that purpose's samples, orders and Psis ("tune": once every kind is tuned, the selection
        measures on its own samples; K-NN's tuning orders, up to 7k x 5k per repeat, were the build's peak there)."""
        if purpose is None:
            for cache in (self._samples, self._sample_orders, self._psis, self._heldout_phi):
                cache.clear()
            return
        for cache, at in ((self._samples, 1), (self._sample_orders, 1), (self._psis, 2)):
            for key in [key for key in cache if key[at] == purpose]:
                del cache[key]  # type: ignore[arg-type]  # each cache with its own keys

    # ---- simulated onboarding --------------------------------------------------------------------------------
    def _val_pool_rows(self, n_val: int) -> np.ndarray:
        """Positions among the first n_val validation prompts labelled by every training LLM."""
        return np.nonzero(~np.isnan(self.data.val_losses[:n_val]).any(axis=1))[0]

    def samples(self, n_val: int, purpose: str = "tune") -> list[Sample]:
        """Per repeat: n_val sampled training prompts and the prompts the Area is measured on (capped other
        training prompts, then the validation ones), seeded by the data's seed, n_val and the purpose: the
        selection re-measures each tuned candidate on fresh samples, so the Area a value was chosen by (the
        best of many, hence optimistic) is not the one the kinds are compared by."""
        key = (n_val, purpose)
        if key not in self._samples:
            d = self.data
            rng = np.random.default_rng([d.seed, n_val, PURPOSES.index(purpose)])
            size = min(n_val, d.X_train.shape[0] - 1)
            vrows = self._val_pool_rows(n_val)
            router_costs = _mean_costs(d.val_costs[:n_val])
            out = []
            for _ in range(REPEATS):
                sample = np.sort(rng.choice(d.X_train.shape[0], size, replace=False))
                rest = np.setdiff1d(self._train_full, sample)
                if rest.size > MAX_EVAL_TRAIN:
                    rest = np.sort(rng.choice(rest, MAX_EVAL_TRAIN, replace=False))
                pool = LabelledPool.of(
                    np.concatenate([1.0 - d.train_losses[rest], 1.0 - d.val_losses[vrows]]),
                    np.concatenate([d.train_costs[rest], d.val_costs[vrows]]),
                    router_costs,
                )
                out.append(Sample(sample, rest, vrows, pool))
            self._samples[key] = out
        return self._samples[key]

    def sample_psi(self, k: int, n_val: int, purpose: str, r: int) -> Any:
        """The training LLMs' Psi on repeat r's sampled prompts (cached: every shrinkage strength reuses it)."""
        key = (k, n_val, purpose, r)
        if key not in self._psis:
            sample = self.samples(n_val, purpose)[r].sample
            self._psis[key] = psi_from_losses(self.train_cluster(k)[sample], self.data.train_losses[sample], k,
                                              [str(i) for i in range(self.data.train_losses.shape[1])])
        return self._psis[key]

    def heldout_phi(self, k: int) -> np.ndarray:
        """(n_tr, K) the LearnedMap's Phi of each training prompt from a map fitted on the other half of them.

        The selection measures the LearnedMap on training prompts too, like the other kinds; the full map was
        fitted to their labels, so each half is routed by a map that never saw it (a map of half the data:
        slightly pessimistic for the LearnedMap).
        """

        if k not in self._heldout_phi:
            d = self.data
            half = np.random.default_rng([d.seed, k, 13]).permutation(d.X_train.shape[0]) % 2 == 0
            phi = np.empty((d.X_train.shape[0], k))
            cluster = self.train_cluster(k)
            names = [str(i) for i in range(d.train_losses.shape[1])]
            for i, fit_rows in enumerate((half, ~half), start=1):
                psi = psi_from_losses(cluster[fit_rows], d.train_losses[fit_rows], k, names).values
                lmap = fit_learned_map(d.X_train[fit_rows], d.train_losses[fit_rows], psi, seed=d.seed,
                                       epochs=self.epochs, purpose=f"training half {i} of 2, routes the other")
                phi[~fit_rows] = lmap.membership(d.X_train[~fit_rows])
            self._heldout_phi[k] = phi
        return self._heldout_phi[k]

    def onboarding_gammas(self, kind: str, k: int, n_val: int, strength: float = 0.0,
                          purpose: str = "tune") -> list[tuple[np.ndarray, LabelledPool]]:
        """Per repeat, (gamma, pool) of a kind whose Psi or K-NN table comes from the n_val sampled prompts."""
        return router_kind(kind).onboarding_gammas(self, k, n_val, strength, purpose)

    def sample_order(self, n_val: int, purpose: str, r: int, k: int) -> np.ndarray:
        """Nearest sampled prompts (at least k) of every prompt the repeat's Area is measured on."""
        key = (n_val, purpose, r)
        if key not in self._sample_orders or self._sample_orders[key].shape[1] < k:
            smp = self.samples(n_val, purpose)[r]
            queries = np.concatenate([self.data.X_train[smp.rest], self.data.X_val[smp.vrows]])
            n_ref = smp.sample.size
            # Room for the next rungs of the search; past a quarter of the references a full sort costs no more.
            width = n_ref if 4 * k >= n_ref else max(k, min(4 * k, 100))
            self._sample_orders[key] = nearest_order(queries, self.data.X_train[smp.sample], width)
        return self._sample_orders[key]

    def onboarding_area(self, kind: str, k: int, n_val: int, strength: float = 0.0) -> float:
        """Mean Area over the tuning repeats of a kind onboarded on n_val sampled training prompts (cached: plain
        K-means and count-aware Psi at strength 0 are the same router)."""
        key = (kind, k, n_val, strength)
        if key not in self._areas:
            gammas = self.onboarding_gammas(kind, k, n_val, strength)
            self._areas[key] = float(np.mean([pool.area(g, N_LAMBDAS) for g, pool in gammas]))
        return self._areas[key]

    # ---- tuning --------------------------------------------------------------------------------------------
    def search(self, area_of: Callable[[int], float], values: list[int]) -> GridSearch:
        """The widening search of a kind's ladder (grids.widening_search, at most MAX_RUNGS values)."""
        return widening_search(area_of, values, max_rungs=MAX_RUNGS)

    def area(self, gamma: np.ndarray, pool: LabelledPool) -> float:
        """The routing Area of gamma (n, M) on a simulated onboarding's pool."""
        return pool.area(gamma, N_LAMBDAS)

    def tune(self, kind: str, n_val: int | None = None) -> Tuned:
        """The kind's hyper-parameters chosen by simulated onboarding with the first n_val validation prompts."""
        n_val = self.data.X_val.shape[0] if n_val is None else n_val
        if (kind, n_val) not in self._tuned:
            self._tuned[(kind, n_val)] = router_kind(kind).tune(self, n_val)
        return self._tuned[(kind, n_val)]
