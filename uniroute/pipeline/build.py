"""The nightly build: choose K, fit K-means and the LearnedMap, compute Psi in SQL, evaluate, version.

Roles in the pipeline: every active model with a cost is a "training LLM" (the hyper-parameters are chosen
with them on the validation prompts, as in the paper's appendix) and the held-out test prompts score the new
router against ZeroRouter and K-NN among the same pool. Which prompts are train / val / test is stored in
`prompt_splits` (from the logs, else a deterministic hash split) and never changes for a prompt.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.evaluation import EvalConfig, TrialSplit, TrialState, curve_metrics
from uniroute.evaluation.plots import plot_build_curves
from uniroute.pipeline import registry
from uniroute.pipeline.build_data import StoreData, embed_prompts, load_store_data, store_split
from uniroute.routers.kmeans import Centroids, fit_centroids_dask
from uniroute.routers.psi import psi_from_store
from uniroute.routers.router import Router
from uniroute.routers.tables import routing_tables, validation_proxy, validation_weights

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
    learned_map_router_id: str
    k: int
    k_learned_map: int
    val_area: float
    promoted: bool
    reason: str
    metrics: dict[str, dict[str, float]]
    models: tuple[str, ...]
    excluded_models: tuple[str, ...]
    n_prompts: dict[str, int]
    mlflow_run_id: str | None
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {**self.__dict__, "models": list(self.models), "excluded_models": list(self.excluded_models)}

    def line(self) -> str:
        area = {m: round(v["area"], 4) for m, v in self.metrics.items()}
        state = "champion" if self.promoted else "challenger"
        return f"built {self.router_id} (K={self.k}, {len(self.models)} models) as {state}: test Area {area}"


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


def write_assignments(db_path: Path, clustering_id: str, prompt_ids: Sequence[str], clusters: np.ndarray) -> None:
    rows = pd.DataFrame(
        {"clustering_id": clustering_id, "prompt_id": list(prompt_ids), "cluster": clusters.astype(np.int32)}
    )
    with store.opened(db_path) as con, store.transaction(con):
        if not bool(store.query(con, "assignments_exist", clustering_id=clustering_id).iloc[0, 0]):
            store.write_frame(con, "cluster_assignments", rows)


def run_build(
    db_path: Path,
    embedder_name: str,
    seed: int,
    tracking_uri: str | None = None,
    artifact_root: Path | None = None,
) -> BuildResult:
    """The nightly build on what is in the store; writes a new router version, never overwrites one."""
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    data = load_store_data(db_path)
    routing = data.eval_data.routing
    split = store_split(data, seed)
    texts = data.eval_data.prompts
    fit_texts = [texts[i] for i in split.train] if embedder_name == "tfidf" else None
    X, embedder = embed_prompts(db_path, texts, embedder_name, seed, fit_texts)
    embedder_id = embedder.embedder_id
    # An embedder fitted on this build's prompts cannot be rebuilt by name: it is stored with the router.
    fitted_embedder = embedder if fit_texts is not None else None
    seconds["load_and_embed"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    config = EvalConfig(seed=seed, methods=EVALUATED_METHODS)
    state = _tuning_state(X, data, split, config)
    n_val = len(state.split.val)
    k, areas = state.tune_clusters("kmeans", n_val)
    centroids = final_centroids(state, X, split, k, seed)
    clustering_id = registry.clustering_id_of(centroids)
    write_assignments(db_path, clustering_id, data.eval_data.prompt_ids, centroids.assign(X))
    with store.opened(db_path) as con:
        val_clusters = store.query(con, "val_prompt_clusters", clustering_id=clustering_id)
        psi = psi_from_store(con, val_clusters, k)
        costs = store.query(con, "model_val_costs").set_index("model")["cost"]
    models = tuple(m for m in routing.models if m in psi.models)
    rows = [psi.models.index(m) for m in models]
    router = Router(
        embedder_id, models, costs.loc[list(models)].to_numpy(float), psi.values[rows], centroids, psi.counts[rows]
    )
    k_lm, _ = state.tune_clusters("learnedmap", n_val)
    lmap = state.learned_map(k_lm)
    lm_centroids = state.centroids(k_lm)
    lm_psi = router_psi_on(lm_centroids, X[split.val], routing, split, models)
    lm_router = Router(embedder_id, models, router.costs, lm_psi.values, lmap, lm_psi.counts)
    seconds["fit"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    metrics, curves = held_out_metrics(state, split, n_val, k, k_lm)
    seconds["evaluate"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    router_id = registry.new_router_id("kmeans")
    lm_router_id = registry.new_router_id("learnedmap")
    fingerprint = registry.data_fingerprint(db_path)
    val_area = float(areas[k])
    champion_area = registry.champion_val_area(db_path)
    promoted = champion_area is None or val_area >= champion_area
    reason = (
        "first build"
        if champion_area is None
        else f"validation Area {val_area:.4f} {'>=' if promoted else '<'} champion's {champion_area:.4f}"
    )
    run_id = None
    if tracking_uri is not None and artifact_root is not None:
        record = _log_build(
            embedder_name,
            tracking_uri,
            artifact_root,
            router,
            router_id,
            k,
            embedder_id,
            fingerprint,
            metrics,
            curves,
            registry.psi_table(router),
            val_area,
        )
        promoted, reason, run_id = record.promoted, record.reason, record.run_id
    metric_rows = pd.DataFrame(
        [{"method": m, "metric": name, "value": v} for m, vals in metrics.items() for name, v in vals.items()]
    )
    registry.save_router_version(
        db_path,
        router,
        router_id,
        clustering_id,
        centroids,
        "kmeans",
        fingerprint,
        val_area,
        promoted,
        reason,
        mlflow_run_id=run_id,
        fitted_embedder=fitted_embedder,
        metrics=metric_rows,
        curves=curves,
    )
    registry.save_router_version(
        db_path,
        lm_router,
        lm_router_id,
        registry.clustering_id_of(lm_centroids),
        lm_centroids,
        "learnedmap",
        fingerprint,
        float(areas.get(k_lm, np.nan)),
        promoted,
        f"LearnedMap sibling of {router_id}",
        mlflow_run_id=run_id,
        fitted_embedder=fitted_embedder,
    )
    seconds["record"] = time.perf_counter() - t0
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
        n_prompts={"train": len(split.train), "val": n_val, "test": len(split.test)},
        mlflow_run_id=run_id,
        seconds=seconds,
    )
    log.info(result.line())
    return result


def router_psi_on(centroids: Centroids, X_val: np.ndarray, routing, split: TrialSplit, models: Sequence[str]):
    """Psi of `models` on the validation prompts under `centroids` (numpy; the LearnedMap's K may differ)."""
    from uniroute.routers.psi import psi_from_losses

    cols = [routing.models.index(m) for m in models]
    losses = 1.0 - routing.scores[np.ix_(split.val, cols)]
    return psi_from_losses(centroids.assign(X_val), losses, centroids.k, list(models))


def held_out_metrics(
    state: TrialState, split: TrialSplit, n_val: int, k: int, k_lm: int
) -> tuple[dict[str, dict[str, float]], pd.DataFrame]:
    """Area, Area50, QNC, Peak and curve vertices of kmeans, learnedmap, zero and knn on the test prompts."""
    pool = state.test_pool(n_val)
    test_cost = pool.prompt_costs.mean(axis=0)
    test_score = pool.scores.mean(axis=0)
    best = int(np.lexsort((test_cost, -test_score))[0])
    k_knn, _ = state.tune_knn(n_val)
    curves = {
        "kmeans": state.cluster_curve("kmeans", k, n_val, pool),
        "learnedmap": state.cluster_curve("learnedmap", k_lm, n_val, pool),
        "zero": state.zero_curve(n_val, pool),
        "knn": state.knn_curve(k_knn, n_val, pool),
    }
    metrics = {m: curve_metrics(c, float(test_score[best]), float(test_cost[best])) for m, c in curves.items()}
    rows = [
        {"method": m, "point": i, "cost": float(x), "score": float(y)}
        for m, c in curves.items()
        for i, (x, y) in enumerate(zip(c.cost, c.score, strict=True))
    ]
    return metrics, pd.DataFrame(rows)


def _log_build(
    embedder_name,
    tracking_uri, artifact_root, router, router_id, k, embedder_id, fingerprint, metrics, curves, psi_frame, val_area
):
    from uniroute.pipeline import tracking

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        artifacts = {
            "centroids.npy": tmp_path / "centroids.npy",
            "psi.csv": tmp_path / "psi.csv",
            "deferral_curves.csv": tmp_path / "deferral_curves.csv",
            "deferral_curves.png": tmp_path / "deferral_curves.png",
            "routing_table.csv": tmp_path / "routing_table.csv",
        }
        np.save(artifacts["centroids.npy"], router.assigner.centers)
        psi_frame.to_csv(artifacts["psi.csv"], index=False)
        curves.to_csv(artifacts["deferral_curves.csv"], index=False)
        tables = routing_tables(router, router.models, validation_weights(router))
        table = tables.routes.merge(tables.budgets, on=["grid", "budget", "lam"])
        table.to_csv(artifacts["routing_table.csv"], index=False)
        plot_build_curves(curves, artifacts["deferral_curves.png"], router_id)
        flat = {f"{m}_{name}": v for m, vals in metrics.items() for name, v in vals.items() if np.isfinite(v)}
        return tracking.log_build(
            tracking_uri,
            artifact_root,
            router,
            router_id,
            params={
                "k": k,
                "embedder_id": embedder_id,
                "pool": ",".join(router.models),
                "data_fingerprint": fingerprint,
            },
            metrics={**flat, "val_area": val_area},
            artifacts=artifacts,
            val_area=val_area,
            embedder_name=embedder_name,
            # The same stand-in for validation prompts that `uniroute route --budget` uses, so the served
            # model turns a budget into the same lambda.
            val_embeddings=validation_proxy(router),
        )
