"""The nightly build: choose K, fit K-means and the LearnedMap, compute Psi in SQL, evaluate, version.

Roles in the pipeline (build_data.store_split): the "training LLMs" are the models with training labels that
together label most validation prompts (the hyper-parameters are chosen with them on the validation prompts,
as in the paper's appendix); the "test LLMs" are the models that together label most test prompts, where the
new router is scored against ZeroRouter and K-NN. Every active, costed model with validation results gets a
Psi row. Which prompts are train / val / test is stored in `prompt_splits` (from the logs, else a deterministic
hash split) and never changes for a prompt.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.evaluation import EvalConfig, TrialSplit, TrialState, curve_metrics
from uniroute.faults import crashpoint
from uniroute.pipeline import registry
from uniroute.pipeline.battles import assign_battle_prompts
from uniroute.pipeline.build_data import StoreData, embed_prompts, load_store_data, store_split
from uniroute.routers.kmeans import Centroids, fit_centroids, fit_centroids_dask
from uniroute.routers.psi_battles import psi_with_battles
from uniroute.routers.router import Router

log = logging.getLogger(__name__)

# Above this many training prompts K-means runs on Dask (mini-batch over chunks, STACK.md: ~7 s for
# 1M x 384) and K is tuned on a fixed subsample: an exact K-means per candidate K would take minutes each.
DASK_KMEANS_MIN_PROMPTS = 200_000
TUNING_SAMPLE = 50_000
# Deviation from the paper's protocol at scale: above these sizes K (and K-NN's k) is chosen on a fixed random
# subsample of the validation prompts and the build is scored on a subsample of the test prompts. The paper's
# grids grow with the validation set (K up to n_val / 50, k up to n_val / 3): at 1M prompts (100k val, 300k
# test) tuning would fit K-means up to K = 2,000 and hold a 100k x 33k neighbour table (27 GB), and the K-NN
# test curve a 300k x 100k similarity matrix (120 GB). The registered router's Psi still uses every
# validation prompt (computed in SQL); only the choice of K and the reported held-out metrics use the samples.
TUNING_VAL_SAMPLE = 5_000
EVAL_TEST_SAMPLE = 20_000
EVALUATED_METHODS = ("kmeans", "learnedmap", "zero", "knn")


@dataclass(frozen=True)
class BuildResult:
    """What a build produced and how it compares."""

    router_id: str
    learned_map_router_id: str | None
    k: int
    k_learned_map: int | None
    val_area: float | None
    promoted: bool
    reason: str
    metrics: dict[str, dict[str, float]]
    models: tuple[str, ...]
    excluded_models: tuple[str, ...]
    roles: dict[str, list[str]]  # which models tuned the build (training) and which were scored on test prompts
    n_prompts: dict[str, int]
    notes: tuple[str, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {**self.__dict__, "models": list(self.models), "excluded_models": list(self.excluded_models),
                "notes": list(self.notes)}

    def line(self) -> str:
        area = {m: round(v["area"], 4) for m, v in self.metrics.items()}
        state = "champion" if self.promoted else "challenger"
        scored = f"test Area {area}" if area else "no held-out evaluation"
        notes = "".join(f"; {note}" for note in self.notes)
        return f"built {self.router_id} (K={self.k}, {len(self.models)} models) as {state}: {scored}{notes}"


def _subsample(rng: np.random.Generator, rows: np.ndarray, size: int) -> np.ndarray:
    """rows itself when it has at most `size` entries, else a sorted random subset of that size."""
    return rows if len(rows) <= size else np.sort(rng.choice(rows, size, replace=False))


def _tuning_state(X: np.ndarray, data: StoreData, split: TrialSplit, config: EvalConfig) -> TrialState:
    rng = np.random.default_rng(split.fit_seed)
    # Training prompts are drawn first: a build that only subsamples them draws what it always drew.
    train = _subsample(rng, split.train, TUNING_SAMPLE)
    val = _subsample(rng, split.val, TUNING_VAL_SAMPLE)
    test = _subsample(rng, split.test, EVAL_TEST_SAMPLE)
    if (len(train), len(val), len(test)) == (len(split.train), len(split.val), len(split.test)):
        return TrialState(X, data.eval_data.routing, split, config)
    log.info("tuning on %d of %d training and %d of %d validation prompts, scoring on %d of %d test prompts",
             len(train), len(split.train), len(val), len(split.val), len(test), len(split.test))
    return TrialState(
        X,
        data.eval_data.routing,
        TrialSplit(split.train_models, split.test_models, train, val, test, split.fit_seed),
        config,
    )


def final_centroids(state: TrialState, X: np.ndarray, split: TrialSplit, k: int, seed: int) -> Centroids:
    """K-means on all training prompts: the tuned fit when it used them all, else a Dask fit."""
    if len(split.train) < DASK_KMEANS_MIN_PROMPTS and len(state.split.train) == len(split.train):
        return state.centroids(k)
    import dask.array as da

    return fit_centroids_dask(da.from_array(X[split.train], chunks=(50_000, X.shape[1])), k, seed)


def write_assignments(
    con: store.Connection, clustering_id: str, prompt_ids: Sequence[str], clusters: np.ndarray
) -> None:
    """Each prompt's cluster under a clustering (once: an identical rebuild reuses the stored rows)."""
    if bool(store.query(con, "assignments_exist", clustering_id=clustering_id).iloc[0, 0]):
        return
    store.write_frame(con, "cluster_assignments", pd.DataFrame(
        {"clustering_id": clustering_id, "prompt_id": list(prompt_ids), "cluster": clusters.astype(np.int32)}))


def default_k(n_val: int, n_train: int) -> int:
    """K without training LLMs to tune it on: n_val / 50, as the paper's appendix does for Math+Code."""
    return int(min(max(3, round(n_val / 50)), n_train))


def run_build(con: store.Connection, embedder_name: str, seed: int, cache_dir: Path | None = None) -> BuildResult:
    """The nightly build on what is in the store, in the caller's session: new router versions, never overwrites.

    The K-means router is served (promoted) when its validation Area is not below the champion's; the
    LearnedMap is stored beside it as a candidate. With fewer than two training LLMs K is not tuned
    (default_k) and no LearnedMap is fitted; with fewer than two test LLMs the held-out evaluation is skipped.
    """
    seconds: dict[str, float] = {}
    notes: list[str] = []
    t0 = time.perf_counter()
    data = load_store_data(con)
    routing = data.eval_data.routing
    split = store_split(data, seed)
    texts = data.eval_data.prompts
    fit_texts = [texts[i] for i in split.train] if embedder_name == "tfidf" else None
    X, embedder = embed_prompts(con, texts, embedder_name, seed, fit_texts, cache_dir)
    embedder_id = embedder.embedder_id
    seconds["load_and_embed"] = time.perf_counter() - t0
    crashpoint("build:embedded")

    t0 = time.perf_counter()
    config = EvalConfig(seed=seed, methods=EVALUATED_METHODS)
    state = _tuning_state(X, data, split, config)
    n_val = len(state.split.val)
    tunable = len(split.train_models) >= 2
    if tunable:
        k, areas = state.tune_clusters("kmeans", n_val)
    else:
        k, areas = default_k(n_val, len(split.train)), {}
        notes.append(f"{len(split.train_models)} training LLM(s): K = {k} without tuning, no LearnedMap")
    centroids = final_centroids(state, X, split, k, seed) if tunable else fit_centroids(X[split.train], k, seed)
    clustering_id = registry.clustering_id_of(centroids)
    write_assignments(con, clustering_id, data.eval_data.prompt_ids, centroids.assign(X))
    assign_battle_prompts(con, clustering_id, centroids, lambda: embedder)
    val_clusters = store.query(con, "val_prompt_clusters", clustering_id=clustering_id)
    psi = psi_with_battles(con, val_clusters, k)
    costs = store.query(con, "model_val_costs").set_index("model")["cost"]
    models = tuple(m for m in routing.models if m in psi.models and pd.notna(costs.get(m)))
    rows = [psi.models.index(m) for m in models]
    router = Router(
        embedder_id, models, costs.loc[list(models)].to_numpy(float), psi.values[rows], centroids, psi.counts[rows]
    )
    k_lm = None
    if tunable:
        k_lm, _ = state.tune_clusters("learnedmap", n_val)
        lm_centroids = state.centroids(k_lm)
        lm_psi = router_psi_on(lm_centroids, X[split.val], routing, split, models)
        lm_costs = router.costs[[models.index(m) for m in lm_psi.models]]
        lm_router = Router(embedder_id, lm_psi.models, lm_costs, lm_psi.values, state.learned_map(k_lm), lm_psi.counts)
    seconds["fit"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    if len(split.test_models) >= 2 and len(split.test) >= 2:
        metrics, curves = held_out_metrics(state, split, n_val, k, k_lm)
    else:
        metrics, curves = {}, pd.DataFrame(columns=["method", "point", "cost", "score"])
        notes.append(f"held-out evaluation skipped: {len(split.test_models)} model(s) with results on "
                     f"{len(split.test)} common test prompts")
    seconds["evaluate"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    router_id = registry.new_router_id("kmeans")
    fingerprint = registry.data_fingerprint(con)
    val_area = float(areas[k]) if areas else None
    champion_area = registry.champion_val_area(con)
    promoted = champion_area is None or val_area is None or val_area >= champion_area
    if champion_area is None:
        reason = "first build" if registry.champion_id(con) is None else "the champion has no validation Area"
    elif val_area is None:
        reason = "no training LLMs to compare validation Areas with: the newest build is served"
    else:
        reason = f"validation Area {val_area:.4f} {'>=' if promoted else '<'} champion's {champion_area:.4f}"
    metric_rows = pd.DataFrame(
        [{"method": m, "metric": name, "value": v} for m, vals in metrics.items() for name, v in vals.items()]
    )
    registry.save_router_version(
        con, router, router_id, clustering_id, centroids, "kmeans", fingerprint, val_area, promoted, reason,
        embedder=embedder, metrics=metric_rows, curves=curves,
    )
    lm_router_id = None
    if k_lm is not None:
        lm_router_id = registry.new_router_id("learnedmap")
        registry.save_router_version(
            con, lm_router, lm_router_id, registry.clustering_id_of(lm_centroids), lm_centroids, "learnedmap",
            fingerprint, float(areas.get(k_lm, np.nan)) if areas else None, False,
            f"LearnedMap candidate beside {router_id}", candidate_of=router_id, embedder=embedder,
        )
    seconds["record"] = time.perf_counter() - t0
    crashpoint("build:written")
    result = BuildResult(
        router_id=router_id,
        learned_map_router_id=lm_router_id,
        k=k,
        k_learned_map=k_lm,
        val_area=val_area,
        promoted=promoted,
        reason=reason,
        metrics=metrics,
        models=models,
        excluded_models=data.eval_data.excluded_models,
        roles={
            "training": [routing.models[i] for i in split.train_models],
            "test": [routing.models[i] for i in split.test_models],
        },
        n_prompts={"train": len(split.train), "val": n_val, "test": len(split.test)},
        notes=tuple(notes),
        seconds=seconds,
    )
    log.info(result.line())
    return result


def router_psi_on(centroids: Centroids, X_val: np.ndarray, routing, split: TrialSplit, models: Sequence[str]):
    """Psi of `models` on the validation prompts under `centroids` (numpy; the LearnedMap's K may differ); models
    without a result there (pairwise evidence only) are left out."""
    from uniroute.routers.psi import psi_from_losses

    models = [m for m in models if not np.isnan(routing.scores[split.val, routing.models.index(m)]).all()]
    cols = [routing.models.index(m) for m in models]
    losses = 1.0 - routing.scores[np.ix_(split.val, cols)]
    return psi_from_losses(centroids.assign(X_val), losses, centroids.k, list(models))


def held_out_metrics(
    state: TrialState, split: TrialSplit, n_val: int, k: int, k_lm: int | None
) -> tuple[dict[str, dict[str, float]], pd.DataFrame]:
    """Area, Area50, QNC, Peak and curve vertices of kmeans, learnedmap, zero and knn on the test prompts."""
    pool = state.test_pool(n_val)
    test_cost = pool.prompt_costs.mean(axis=0)
    test_score = pool.scores.mean(axis=0)
    best = int(np.lexsort((test_cost, -test_score))[0])
    k_knn = state.tune_knn(n_val)[0] if len(split.train_models) >= 2 else max(1, round(np.sqrt(n_val)))
    curves = {"kmeans": state.cluster_curve("kmeans", k, n_val, pool)}
    if k_lm is not None:
        curves["learnedmap"] = state.cluster_curve("learnedmap", k_lm, n_val, pool)
    curves["zero"] = state.zero_curve(n_val, pool)
    curves["knn"] = state.knn_curve(k_knn, n_val, pool)
    metrics = {m: curve_metrics(c, float(test_score[best]), float(test_cost[best])) for m, c in curves.items()}
    rows = [
        {"method": m, "point": i, "cost": float(x), "score": float(y)}
        for m, c in curves.items()
        for i, (x, y) in enumerate(zip(c.cost, c.score, strict=True))
    ]
    return metrics, pd.DataFrame(rows)
