"""Pipeline operations as the command line runs them, for the benchmarks: one store session each (one connection,
one transaction), then, where MLflow is on, the reconciliation that brings MLflow and `published/current` in line
with the store (what `uniroute build|onboard|publish` do after the operation). tests/helpers.py does the same
without MLflow. Also what the scale sections share: a fresh UNIROUTE_HOME and a timed build."""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.runner import load_average, rounded
from uniroute import store
from uniroute.settings import Settings

log = logging.getLogger("benchmarks.scale")


def fresh_home(path: Path) -> Settings:
    """Settings for an empty UNIROUTE_HOME at path (removed first if it exists)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return Settings(home=path)


def ingest(db_path: Path, path: Path, **options: Any) -> Any:
    """IngestSummary of one file ingested in its own session."""
    from uniroute.ingest import ingest_file

    with store.session(db_path, "ingest", inputs=str(path)) as s:
        return ingest_file(s.con, path, **options)


def embedded(db_path: Path, texts: list[str], embedder: Any) -> np.ndarray:
    """(n, dim) vectors of texts through the store's embedding cache (each chunk commits on its own)."""
    from uniroute.embed import embed_cached

    with store.session(db_path, "embed", atomic=False) as s:
        return embed_cached(s.con, texts, embedder)


def reconciled(settings: Settings, artifact_root: Path | None = None) -> None:
    """MLflow (runs, registered versions, aliases) and `published/current` brought in line with the store."""
    from uniroute.pipeline.reconcile import reconcile

    with store.session(settings.db_path, "reconcile") as s:
        reconcile(s, settings.published_dir, settings.mlflow_uri, artifact_root or settings.mlflow_artifacts,
                  cache_dir=settings.cache_dir)


def build(settings: Settings, embedder: str, seed: int, mlflow: bool = True, cache_dir: Path | None = None) -> Any:
    """BuildResult of `uniroute build`: the build session, then (mlflow) the MLflow sync."""
    from uniroute.pipeline.build import run_build

    with store.session(settings.db_path, "build") as s:
        result = run_build(s.con, embedder, seed, cache_dir=cache_dir or settings.cache_dir)
    if mlflow:
        reconciled(settings)
    return result


def onboard(settings: Settings, models: list[str], mlflow: bool = True, artifact_root: Path | None = None) -> Any:
    """OnboardResult of `uniroute onboard`: the onboarding session, then (mlflow) the MLflow sync."""
    from uniroute.pipeline.onboard import onboard_models

    with store.session(settings.db_path, "onboard") as s:
        result = onboard_models(s.con, models, cache_dir=settings.cache_dir)
    if mlflow:
        reconciled(settings, artifact_root)
    return result


def publish(settings: Settings, force: bool = False, mlflow: bool = True, artifact_root: Path | None = None) -> Any:
    """PublishResult of `uniroute publish`: the snapshot written and switched to, then (mlflow) logged."""
    from uniroute.pipeline.publish import publish_champion, switch_current_after_commit

    with store.session(settings.db_path, "publish") as s:
        result = publish_champion(s.con, settings.published_dir, force=force)
        switch_current_after_commit(s, settings.published_dir, result)
    if mlflow:
        reconciled(settings, artifact_root)
    return result


def champion_models(db_path: Path) -> tuple[str, ...]:
    """The models the store's champion router routes."""
    from uniroute.pipeline import registry

    with store.opened(db_path, read_only=True) as con:
        return registry.load_champion(con).router.models


def build_figures(result, wall: float) -> dict[str, Any]:
    """What a BuildResult says about speed and outcome."""
    return {
        "seconds": rounded(result.seconds),
        "seconds_total": round(wall, 3),
        "kind": result.kind,
        "k": result.k,
        "selection": result.selection,
        "models": len(result.models),
        "excluded_models": list(result.excluded_models),
        "n_prompts": result.n_prompts,
        "promoted": result.promoted,
        "test_area": {m: round(v["area"], 4) for m, v in result.metrics.items()},
        "mlflow": None,  # set by timed_build
    }


def timed_build(settings, embedder: str, seed: int, mlflow: bool = True, cache_dir: Path | None = None
                ) -> dict[str, Any]:
    """Figures of one build as `uniroute build` runs it (the build session, then the MLflow sync when mlflow)."""
    t0 = time.perf_counter()
    result = build(settings, embedder, seed, mlflow=mlflow, cache_dir=cache_dir)
    figures = build_figures(result, time.perf_counter() - t0)
    figures["mlflow"] = mlflow
    figures["load_average_after"] = load_average()
    log.info("build: %s", json.dumps(figures))
    return figures
