"""The `knn` kind: K-NN over the validation prompts (the paper's baseline, eq. 3), its label table playing Psi.

Shapes: n_val validation prompts (the references), P pool models, d embedding dimension.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from uniroute.routers.kinds import HeldOutState, RouterKind, Tuned, TuningEngine, neighbour_ladder
from uniroute.routers.knn.neighbours import KnnRouter, index_dtype, knn_gammas, nearest_order, top_k_order

log = logging.getLogger(__name__)

BLOCK_RUNGS = 4  # rungs scored together from one neighbour search
TEST_BLOCK = 1024  # test prompts whose neighbour order is found at once (1024 x 5k similarities, 40 MB of indices)


class KnnKind(RouterKind):
    """K-NN: a model's loss on a prompt is its mean loss on the k nearest validation prompts."""

    name = "knn"
    value_label = "k"
    title = "K-NN"
    paper_baseline = True
    transfers = True
    pairwise_variant = "neighbours"

    def ladder(self, n_val: int, n_train: int) -> list[int]:
        """Candidate k: 1 to the number of references a simulated onboarding samples."""
        return neighbour_ladder(min(n_val, n_train - 1))

    def tune(self, engine: TuningEngine, n_val: int) -> Tuned:
        """k climbing its ladder, a block of rungs scored from one neighbour search."""
        values = self.ladder(n_val, engine.data.X_train.shape[0])
        cache: dict[int, float] = {}

        def knn_area(k: int) -> float:
            if k not in cache:  # one neighbour search and one pass over the votes serve a block of rungs
                cache.update(self.onboarding_areas(engine, [v for v in values if v >= k][:BLOCK_RUNGS], n_val))
            return cache[k]

        search = engine.search(knn_area, values)
        return Tuned(self.name, search.chosen, search=search)

    def onboarding_areas(self, engine: TuningEngine, ks: list[int], n_val: int) -> dict[int, float]:
        """{k: mean Area over the tuning repeats of K-NN onboarded on n_val sampled training prompts}."""
        areas: dict[int, list[float]] = {k: [] for k in ks}
        for r, smp in enumerate(engine.samples(n_val, "tune")):
            order = engine.sample_order(n_val, "tune", r, max(ks))
            gammas = knn_gammas(order, engine.data.train_losses[smp.sample], ks)
            for k in ks:
                areas[k].append(engine.area(gammas[k], smp.pool))
        return {k: float(np.mean(v)) for k, v in areas.items()}

    def onboarding_gammas(self, engine: TuningEngine, value: int, n_val: int, strength: float,
                          purpose: str) -> list[tuple[np.ndarray, Any]]:
        """Per repeat, (gamma, pool) with the sampled prompts as the references."""
        out = []
        for r, smp in enumerate(engine.samples(n_val, purpose)):
            order = engine.sample_order(n_val, purpose, r, value)
            out.append((knn_gammas(order, engine.data.train_losses[smp.sample], [value])[value], smp.pool))
        return out

    def untuned(self, n_val: int, n_train: int) -> Tuned | None:
        """k = sqrt(n_val)."""
        return Tuned(self.name, int(min(max(1, round(np.sqrt(n_val))), n_val)))

    def test_gamma(self, state: HeldOutState, tuned: Tuned, n_val: int) -> np.ndarray:
        """(n_te, M_te) the test LLMs' mean loss on each test prompt's k nearest of the first n_val val prompts."""
        losses = state.test_llm_val_losses(n_val)
        k = min(tuned.value, n_val)
        n_te = state.X_test.shape[0]
        # By blocks of test prompts, similarities included: over all 20k x 5k at once, argpartition's int64 indices
        # and the negated copy were 1.2 GB of a build's driver, the similarities 0.4 GB more
        # (benchmarks/scale/dask_plane.py --build). A block's similarities can differ from the whole matrix's in the
        # last bit (BLAS blocks the product by its shape), which on 20k x 5k build embeddings reordered the top 300 of
        # 33 rows and changed none of their sets: the mean loss over the k nearest is the same.
        # The smallest index type, as nearest_order's: the same indices in a quarter of the bytes (20k x k of them).
        order = np.concatenate([top_k_order(state.test_val_sims(slice(s, s + TEST_BLOCK))[:, :n_val], k)
                                .astype(index_dtype(n_val)) for s in range(0, max(n_te, 1), TEST_BLOCK)])
        return knn_gammas(order, losses, [k])[k]

    def gamma_from_training_labels(self, state: HeldOutState, value: int) -> np.ndarray:
        """(n_te, M) every LLM's mean loss on each test prompt's k nearest training prompts."""
        return knn_gammas(nearest_order(state.X_test, state.X_train, value), state.train_losses, [value])[value]

    def served_router(self, engine: TuningEngine, tuned: Tuned, embedder_id: str, models: Sequence[str],
                      losses: np.ndarray, costs: np.ndarray, val_prompt_ids: Sequence[str]) -> KnnRouter:
        """K-NN over the first n_val validation prompts, the pool's losses on them as its label table."""
        n_val = losses.shape[0]
        return KnnRouter(embedder_id, tuple(models), costs, losses.T, engine.data.X_val[:n_val],
                         tuple(val_prompt_ids[:n_val]), min(tuned.value, n_val))

    def router_arrays(self, router: KnnRouter) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Header `neighbours`; arrays labels (M, n_ref), refs (n_ref, d), ref_ids (n_ref,) unicode."""
        return {"neighbours": router.neighbours}, {
            "labels": router.labels, "refs": router.refs, "ref_ids": np.array(router.ref_ids, dtype=str)
        }

    def router_from_arrays(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> KnnRouter:
        """The K-NN router of a stored header and arrays."""
        return KnnRouter(str(header["embedder_id"]), tuple(str(m) for m in header["models"]), arrays["costs"],
                         labels=arrays["labels"], refs=arrays["refs"], ref_ids=tuple(str(i) for i in arrays["ref_ids"]),
                         neighbours=int(header["neighbours"]))


KNN = KnnKind()
