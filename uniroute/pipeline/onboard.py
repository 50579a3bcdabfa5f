"""Onboarding: make new (or re-evaluated) models routable on the champion's frozen clusters, no retraining.

A model's Psi row is its mean loss per cluster on the validation prompts (a SQL group-by over the stored
cluster assignments). Only validation prompts that arrived with the new results and have no cluster yet are
embedded; old prompts are never re-embedded, nothing is re-clustered or retrained.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.pipeline import registry
from uniroute.routers.psi import psi_frame_from_store, psi_from_frame
from uniroute.routers.tables import validation_proxy

log = logging.getLogger(__name__)


class OnboardError(ValueError):
    """Models that cannot be onboarded; the message names them and says why."""


@dataclass(frozen=True)
class OnboardResult:
    """A child router version that adds or refreshes models."""

    router_id: str
    parent_id: str
    models: tuple[str, ...]
    embedded_prompts: int
    seconds: float
    mlflow_run_id: str | None

    def as_dict(self) -> dict:
        return {**self.__dict__, "models": list(self.models)}

    def line(self) -> str:
        return (
            f"onboarded {', '.join(self.models)} -> router {self.router_id} (parent {self.parent_id}), "
            f"{self.embedded_prompts} new prompts embedded, {self.seconds:.2f}s"
        )


def assign_new_prompt_clusters(db_path: Path, clustering_id: str, prompts: pd.DataFrame, clusters: np.ndarray) -> None:
    """Append (clustering_id, prompt_id, cluster) rows for prompts that had none."""
    rows = pd.DataFrame(
        {
            "clustering_id": clustering_id,
            "prompt_id": prompts["prompt_id"].to_numpy(),
            "cluster": clusters.astype(np.int32),
        }
    )
    with store.opened(db_path) as con, store.transaction(con):
        store.write_frame(con, "cluster_assignments", rows)


def onboard_models(
    db_path: Path,
    models: Sequence[str],
    tracking_uri: str | None = None,
    artifact_root: Path | None = None,
) -> OnboardResult:
    """Add or refresh `models` in a child of the champion router, from their validation results."""
    started = time.perf_counter()
    models = tuple(dict.fromkeys(str(m) for m in models))
    if not models:
        raise OnboardError("no model named: nothing to onboard")
    champion = registry.load_champion(db_path, read_only=False)
    router = champion.router
    centroids = router.assigner
    with store.opened(db_path) as con:
        known = store.query(con, "model_status", models=list(models))
        unknown = sorted(set(models) - set(known.model))
        if unknown:
            raise OnboardError(f"models {unknown} have no results in the store: ingest their validation results first")
        with store.transaction(con):
            store.execute(con, "reactivate_models", models=list(models))
            store.execute(con, "assign_splits")
        new_prompts = store.query(
            con, "unassigned_val_prompts", clustering_id=champion.clustering_id, models=list(models)
        )
    if len(new_prompts):
        from uniroute import embed

        embedder = champion.embedder()
        router.check_embedder(embedder.embedder_id)
        X = embed.embed_cached(db_path, new_prompts["text"].tolist(), embedder)
        assign_new_prompt_clusters(db_path, champion.clustering_id, new_prompts, centroids.assign(X))
    with store.opened(db_path) as con:
        val_clusters = store.query(con, "val_prompt_clusters", clustering_id=champion.clustering_id)
        frame = psi_frame_from_store(con, val_clusters)
        costs = store.query(con, "model_val_costs").set_index("model")
    frame = frame[frame["model"].isin(models)]
    missing = sorted(set(models) - set(frame["model"]))
    if missing:
        raise OnboardError(f"models {missing} have no results on validation prompts: nothing to build Psi from")
    no_cost = [m for m in models if m not in costs.index or pd.isna(costs.loc[m, "cost"])]
    if no_cost:
        raise OnboardError(f"models {no_cost} have no cost: give one with `uniroute models set-cost MODEL COST`")
    psi = psi_from_frame(frame, router.k)
    for model in models:
        i = psi.models.index(model)
        router = router.with_model(model, psi.values[i], float(costs.loc[model, "cost"]), psi.counts[i])
    router_id = registry.new_router_id("kmeans")
    run_id = None
    if tracking_uri is not None and artifact_root is not None:
        from uniroute.pipeline import tracking

        psi_csv = Path(tempfile.mkdtemp(prefix="uniroute-onboard-")) / "psi.csv"
        registry.psi_table(router).query("model in @models").to_csv(psi_csv, index=False)
        record = tracking.log_onboard(
            tracking_uri,
            artifact_root,
            router,
            router_id,
            champion.router_id,
            params={
                "models": ",".join(models),
                "k": router.k,
                "embedder_id": router.embedder_id,
                "pool": ",".join(router.models),
            },
            metrics={"embedded_prompts": float(len(new_prompts))},
            artifacts={"psi.csv": psi_csv},
            embedder_name=registry.embedder_name(router.embedder_id),
            val_embeddings=validation_proxy(router),
        )
        run_id = record.run_id
    registry.save_router_version(
        db_path,
        router,
        router_id,
        champion.clustering_id,
        centroids,
        kind="kmeans",
        data_fingerprint=registry.data_fingerprint(db_path),
        val_area=champion.val_area,
        promoted=True,
        reason=f"onboarded {', '.join(models)} onto {champion.router_id} at {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}",
        parent_id=champion.router_id,
        mlflow_run_id=run_id,
    )
    result = OnboardResult(
        router_id, champion.router_id, models, len(new_prompts), time.perf_counter() - started, run_id
    )
    log.info(result.line())
    return result


def retire_model(db_path: Path, model: str) -> None:
    """Take a model out of the pool: routing and publishing skip it from now on."""
    with store.opened(db_path) as con:
        known = store.query(con, "model_status", models=[model])
        if known.empty:
            raise OnboardError(f"no model {model!r} in the store")
        store.execute(con, "retire_model", model=model)
