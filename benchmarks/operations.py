"""Pipeline operations as the command line runs them, for the benchmarks: the operations layer
(uniroute/operations/), with MLflow on or off per call, and the store's paths bound from Settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from uniroute import operations, store
from uniroute.pipeline import registry
from uniroute.settings import Settings


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
