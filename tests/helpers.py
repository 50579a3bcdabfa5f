"""The operations layer as the tests call it: a test names its store by path, and these bind that path into an
operations.Context (the store alone: no MLflow, no inbox) and call the one library function. No session, no
recording and no reconciling is written here: that is the operations layer's, the same as the CLI's and flows'."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from uniroute import operations
from uniroute.ingest import IngestSummary
from uniroute.pipeline.build.nightly import BuildResult
from uniroute.pipeline.pool.onboard import OnboardResult
from uniroute.pipeline.pool.retire import RetireResult
from uniroute.pipeline.serving.publish import PublishResult


def ingest(db_path: Path, path: Path, **options: Any) -> IngestSummary:
    return operations.ingest(operations.Context.at(db_path), path, **options)


def embedded(db_path: Path, texts: list[str], embedder: Any, **options: Any) -> np.ndarray:
    return operations.embedded(operations.Context.at(db_path), texts, embedder, **options)


def build(db_path: Path, embedder: str, seed: int = 0, kinds: Sequence[str] = (),
          cache_dir: Path | None = None) -> BuildResult:
    return operations.build(operations.Context.at(db_path, cache_dir=cache_dir), embedder, seed, kinds)


def onboard(db_path: Path, models: list[str]) -> OnboardResult | None:
    """The onboarding's result (None before the first build)."""
    return operations.onboard(operations.Context.at(db_path), models).result


def publish(db_path: Path, published_dir: Path, force: bool = False) -> PublishResult:
    return operations.publish(operations.Context.at(db_path, published_dir), force=force)


def retire(db_path: Path, model: str) -> RetireResult:
    return operations.retire(operations.Context.at(db_path), model).result
