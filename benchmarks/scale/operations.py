"""Pipeline operations as the command line runs them, for the benchmarks: the operations layer
(uniroute/operations/), with MLflow on or off per call and the store's paths bound from Settings. Also what the
scale sections share: a fresh UNIROUTE_HOME and a timed build."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.runner import load_average, rounded
from uniroute import operations, store
from uniroute.pipeline.pool import registry
from uniroute.settings import Settings

log = logging.getLogger("benchmarks.scale")


def fresh_home(path: Path) -> Settings:
    """Settings for an empty UNIROUTE_HOME at path (removed first if it exists)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return Settings(home=path)


def _context(settings: Settings, mlflow: bool = True, artifact_root: Path | None = None,
             cache_dir: Path | None = None) -> operations.Context:
    """The CLI's context for settings; without MLflow when mlflow is False, its artifacts elsewhere if given."""
    ctx = operations.Context.of(settings)
    return dataclasses.replace(
        ctx,
        tracking_uri=settings.mlflow_uri if mlflow else None,
        artifact_root=(artifact_root or settings.mlflow_artifacts) if mlflow else None,
        cache_dir=cache_dir or settings.cache_dir,
    )


def ingest(db_path: Path, path: Path, **options: Any) -> Any:
    """IngestSummary of one file ingested in its own session."""
    return operations.ingest(operations.Context.at(db_path), path, **options)


def embedded(db_path: Path, texts: list[str], embedder: Any) -> np.ndarray:
    """(n, dim) vectors of texts through the store's embedding cache (each chunk commits on its own)."""
    return operations.embedded(operations.Context.at(db_path), texts, embedder)


def reconciled(settings: Settings, artifact_root: Path | None = None) -> None:
    """MLflow (runs, registered versions, aliases) and `published/current` brought in line with the store."""
    operations.reconciled(_context(settings, artifact_root=artifact_root))


def build(settings: Settings, embedder: str, seed: int, mlflow: bool = True, cache_dir: Path | None = None) -> Any:
    """BuildResult of `uniroute build`: the build session, then the reconciliation (with or without MLflow)."""
    return operations.build(_context(settings, mlflow, cache_dir=cache_dir), embedder, seed)


def onboard(settings: Settings, models: list[str], mlflow: bool = True, artifact_root: Path | None = None) -> Any:
    """OnboardResult of `uniroute onboard`: the onboarding session, then the reconciliation."""
    return operations.onboard(_context(settings, mlflow, artifact_root), models).result


def publish(settings: Settings, force: bool = False, mlflow: bool = True, artifact_root: Path | None = None) -> Any:
    """PublishResult of `uniroute publish`: the snapshot written and switched to, then the reconciliation."""
    return operations.publish(_context(settings, mlflow, artifact_root), force=force)


def champion_models(db_path: Path) -> tuple[str, ...]:
    """The models the store's champion router routes."""
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
