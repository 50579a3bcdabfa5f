"""The cluster router's kinds (gamma = Phi(x) . Psi(m), Psi measured on K-means clusters) and the two K-means
kinds: `kmeans` (UniRoute K-means) and `kmeans_shrunk` (count-aware Psi: each cell shrunk toward the pool prior,
psi.pool_prior, the pool's loss in the cluster weighed against the model's overall loss by its evidence; its
strength s chosen with K).

Shapes: n_val validation prompts, P pool models, K clusters.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from uniroute.routers.cluster.hierarchy import group_map, group_sizes, hierarchy_psi
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.psi import psi_from_losses, shrunk_values
from uniroute.routers.kinds import (
    FullScale,
    HeldOutState,
    OnboardingSample,
    RouterKind,
    Tuned,
    TuningEngine,
    cluster_ladder,
)
from uniroute.routers.router import Router

log = logging.getLogger(__name__)

SHRINK_STRENGTHS = (0.0, 2.0, 5.0, 10.0, 20.0, 50.0)  # pseudo-prompts of the pool prior per Psi cell (0: none)
MAP_PREFIX = "map."  # the cluster map's arrays in a stored router
GROUPS_PREFIX = "groups."  # the hierarchy's coarser centres in a stored router: groups.0 (finest), groups.1, ...


class ClusterKind(RouterKind):
    """What the cluster router's kinds share; a subclass says how Phi maps prompts (`test_membership`,
    `measured_gamma`) and how its map is stored (`map_arrays`, `assigner_from`)."""

    value_label = "K"
    transfers = True

    def ladder(self, n_val: int, n_train: int) -> list[int]:
        """Candidate K: 1 to min(n_val, n_train)."""
        return cluster_ladder(n_val, n_train)

    def untuned(self, n_val: int, n_train: int) -> Tuned | None:
        """K = n_val / 50, as the paper's appendix does for Math+Code (at least 3, at most n_train)."""
        return Tuned(self.name, int(min(max(3, round(n_val / 50)), n_train)))

    def measured_gamma(self, engine: TuningEngine, k: int, smp: OnboardingSample, psi_t: np.ndarray) -> np.ndarray:
        """(n_measured, M) gamma of the prompts a simulated onboarding is measured on, from Psi.T (K, M)."""
        clusters = np.concatenate([engine.train_cluster(k)[smp.rest], engine.val_cluster(k)[smp.vrows]])
        return psi_t[clusters]

    def onboarding_gammas(self, engine: TuningEngine, value: int, n_val: int, strength: float,
                          purpose: str) -> list[tuple[np.ndarray, Any]]:
        """Per repeat, (gamma, pool) with the training LLMs' Psi measured on the n_val sampled prompts."""
        out = []
        for r, smp in enumerate(engine.samples(n_val, purpose)):
            psi = engine.sample_psi(value, n_val, purpose, r)
            psi_t = shrunk_values(psi.values, psi.counts, strength).T  # (K, M)
            out.append((self.measured_gamma(engine, value, smp, psi_t), smp.pool))
        return out

    def test_membership(self, state: HeldOutState, k: int) -> np.ndarray:
        """(n_te, K) Phi of the test prompts: one-hot K-means clusters."""
        return state.test_onehot(k)

    def test_gamma(self, state: HeldOutState, tuned: Tuned, n_val: int) -> np.ndarray:
        """(n_te, M_te) Phi(test) . Psi of the test LLMs measured on the first n_val validation prompts."""
        losses = state.test_llm_val_losses(n_val)
        names = state.test_llm_names()
        # A LearnedMap only changes Phi(x); a new LLM's Psi is its per-cluster val loss on the K-means clusters
        # in every cluster kind (paper section 4.3: Psi does not depend on theta).
        psi = psi_from_losses(state.fits.val_cluster(tuned.value)[:n_val], losses, tuned.value, names)
        return self.test_membership(state, tuned.value) @ shrunk_values(psi.values, psi.counts, tuned.shrinkage).T

    def gamma_from_training_labels(self, state: HeldOutState, value: int) -> np.ndarray:
        """(n_te, M) Phi(test) . Psi with every LLM's Psi measured on all training prompts (no shrinkage)."""
        names = list(state.data.models)
        psi = psi_from_losses(state.centroids(value).assign(state.X_train), state.train_losses, value, names).values
        return self.test_membership(state, value) @ psi.T

    def served_router(self, engine: TuningEngine, tuned: Tuned, embedder_id: str, models: Sequence[str],
                      losses: np.ndarray, costs: np.ndarray, val_prompt_ids: Sequence[str]) -> Router:
        """A one-hot K-means router with Psi measured on the validation prompts (shrunk by tuned.shrinkage)."""
        psi = psi_from_losses(engine.val_cluster(tuned.value)[: losses.shape[0]], losses, tuned.value, list(models))
        return Router(embedder_id, psi.models, costs, psi.values, engine.centroids(tuned.value), psi.counts,
                      shrinkage=tuned.shrinkage)

    def full_scale(self, router: Router, scale: FullScale) -> Router:
        """Psi on every validation prompt and (one-hot) K-means on every training prompt, where sampled."""
        refit = router.one_hot and scale.train_sampled
        if not refit and not scale.val_sampled:
            return router
        if refit:
            router = replace(router, assigner=scale.refit_clusters(router.k))
        psi = scale.val_psi(router.psi_clusters(), router.k, router.models)
        return replace(router, psi=psi.values, psi_counts=psi.counts)

    # ---- storage: `psi` (M, K), optionally `psi_counts` and `reference`, the map under `map.` -------------------
    def map_arrays(self, assigner: Any) -> dict[str, np.ndarray]:
        """The cluster map's arrays: the K-means centres."""
        return {"centers": assigner.centers}

    def assigner_from(self, maps: dict[str, np.ndarray]) -> Any:
        """The cluster map from its stored arrays."""
        return Centroids(maps["centers"])

    def router_arrays(self, router: Router) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Header `shrinkage`; arrays psi, psi_counts and reference (when kept) and the map's."""
        arrays = {"psi": router.psi}
        if router.psi_counts is not None:
            arrays["psi_counts"] = router.psi_counts
        if router.reference is not None:
            arrays["reference"] = router.reference
        if router.psi_floor is not None:  # the evidence gate's provisional cells (routers/router.py)
            arrays["psi_floor"] = router.psi_floor
        if router.cost_scale is not None:  # per-cluster model costs for the cost cap (routers/cluster/cluster_costs.py)
            arrays["cost_scale"] = router.cost_scale
        arrays.update({MAP_PREFIX + name: value for name, value in self.map_arrays(router.assigner).items()})
        return {"shrinkage": router.shrinkage}, arrays

    def router_from_arrays(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> Router:
        """The cluster router of a stored header and arrays."""
        maps = {name[len(MAP_PREFIX):]: value for name, value in arrays.items() if name.startswith(MAP_PREFIX)}
        return Router(str(header["embedder_id"]), tuple(str(m) for m in header["models"]), arrays["costs"],
                      arrays["psi"], self.assigner_from(maps), arrays.get("psi_counts"),
                      shrinkage=float(header.get("shrinkage", 0.0)), reference=arrays.get("reference"),
                      psi_floor=arrays.get("psi_floor"), cost_scale=arrays.get("cost_scale"))


class KMeansKind(ClusterKind):
    """UniRoute K-means: Phi is the nearest of K centroids of the training prompts."""

    name = "kmeans"
    refits_clusters = True  # one-hot: full_scale refits its K-means where the training prompts were sampled
    title = "UniRoute (K-means)"
    pairwise_variant: str | None = "clusters"
    report_mark = "†"


class ShrunkKMeansKind(KMeansKind):
    """K-means with count-aware Psi: K and the shrinkage strength s chosen together."""

    name = "kmeans_shrunk"
    title = "UniRoute (K-means, count-aware Psi)"
    # With every training prompt behind each cell there is little for shrinkage to correct: the transfer and
    # pairwise experiments compare plain K-means.
    transfers = False
    pairwise_variant = None
    report_mark = ""

    def tune(self, engine: TuningEngine, n_val: int) -> Tuned:
        """K by the best Area over the strengths (plain K-means' Areas at s = 0), then the best s at that K."""
        by_k: dict[int, dict[float, float]] = {}

        def shrunk_area(k: int) -> float:
            by_k[k] = {s: engine.onboarding_area(KMEANS.name, k, n_val, s) for s in SHRINK_STRENGTHS}
            return max(by_k[k].values())

        search = engine.search(shrunk_area, self.ladder(n_val, engine.data.X_train.shape[0]))
        strengths = by_k[search.chosen]
        best_s = max(strengths, key=lambda s: (strengths[s], -s))
        return Tuned(self.name, search.chosen, best_s, search, strengths)


class HierarchyKind(ShrunkKMeansKind):
    """Count-aware K-means served on the fine clustering K_f = 2K, each cell routed by the mean of itself and its
    groups among K_f / 2 and K_f / 4 (routers.cluster.hierarchy); K and s are count-aware K-means' own.

    The default kind: `auto` serves it unless another kind beats it by two standard errors, as validation supports
    (docs/decisions/0006-several-k-not-served-yet.md)."""

    name = "kmeans_hier"
    title = "UniRoute (K-means hierarchy, count-aware Psi)"

    def tune(self, engine: TuningEngine, n_val: int) -> Tuned:
        """Count-aware K-means' K and s (tuned once, shared with that kind), served on 2K fine clusters."""
        shrunk = engine.tune(KMEANS_SHRUNK.name, n_val)
        k_fine = min(2 * shrunk.value, engine.data.X_train.shape[0])
        return Tuned(self.name, k_fine, shrunk.shrinkage, shrunk.search, shrunk.strengths)

    def untuned(self, n_val: int, n_train: int) -> Tuned | None:
        """Twice K-means' untuned K (at most n_train)."""
        plain = super().untuned(n_val, n_train)
        return None if plain is None else Tuned(self.name, min(2 * plain.value, n_train))

    @staticmethod
    def groups(engine: TuningEngine | HeldOutState, k_fine: int) -> tuple[Centroids, ...]:
        """The coarser K-means clusterings of the training prompts the fine clusters are grouped by."""
        return tuple(engine.centroids(g) for g in group_sizes(k_fine))

    def routing_psi_t(self, engine: TuningEngine | HeldOutState, k_fine: int, values: np.ndarray,
                      counts: np.ndarray, strength: float) -> np.ndarray:
        """(K_f, M) the hierarchy's routing table of measured Psi cells (M, K_f), transposed."""
        fine = engine.centroids(k_fine)
        maps = [(group_map(fine, g), g.k) for g in self.groups(engine, k_fine)]
        return hierarchy_psi(values, counts, strength, maps).T

    def onboarding_gammas(self, engine: TuningEngine, value: int, n_val: int, strength: float,
                          purpose: str) -> list[tuple[np.ndarray, Any]]:
        """Per repeat, (gamma, pool) with the training LLMs' fine Psi measured on the n_val sampled prompts and
        routed through the hierarchy."""
        out = []
        for r, smp in enumerate(engine.samples(n_val, purpose)):
            psi = engine.sample_psi(value, n_val, purpose, r)
            psi_t = self.routing_psi_t(engine, value, psi.values, psi.counts, strength)
            out.append((self.measured_gamma(engine, value, smp, psi_t), smp.pool))
        return out

    def test_gamma(self, state: HeldOutState, tuned: Tuned, n_val: int) -> np.ndarray:
        """(n_te, M_te) the served router's gamma of the test prompts: the test LLMs' fine Psi rows measured on the
        first n_val validation prompts, in a Router with the hierarchy's groups (its routing table as served)."""
        names = state.test_llm_names()
        psi = psi_from_losses(state.fits.val_cluster(tuned.value)[:n_val], state.test_llm_val_losses(n_val),
                              tuned.value, names)
        router = Router("trial", psi.models, np.zeros(len(names)), psi.values, state.centroids(tuned.value),
                        psi.counts, shrinkage=tuned.shrinkage, groups=self.groups(state, tuned.value))
        return self.test_membership(state, tuned.value) @ router.routing_psi.T

    def served_router(self, engine: TuningEngine, tuned: Tuned, embedder_id: str, models: Sequence[str],
                      losses: np.ndarray, costs: np.ndarray, val_prompt_ids: Sequence[str]) -> Router:
        """Count-aware K-means' router on the fine clusters, with the coarser clusterings it groups them by."""
        router = super().served_router(engine, tuned, embedder_id, models, losses, costs, val_prompt_ids)
        return replace(router, groups=self.groups(engine, tuned.value))

    def router_arrays(self, router: Router) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Count-aware K-means' arrays and the coarser centres (groups.0 ... : the group maps derive from them)."""
        header, arrays = super().router_arrays(router)
        arrays.update({f"{GROUPS_PREFIX}{i}": g.centers for i, g in enumerate(router.groups)})
        return header, arrays

    def router_from_arrays(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> Router:
        """The hierarchy router of a stored header and arrays (KeyError without its groups)."""
        names = sorted((n for n in arrays if n.startswith(GROUPS_PREFIX)), key=lambda n: int(n[len(GROUPS_PREFIX):]))
        if not names:
            raise KeyError(f"{GROUPS_PREFIX}0")
        router = super().router_from_arrays(header, arrays)
        return replace(router, groups=tuple(Centroids(arrays[n]) for n in names))


KMEANS = KMeansKind()
KMEANS_SHRUNK = ShrunkKMeansKind()
KMEANS_HIER = HierarchyKind()
