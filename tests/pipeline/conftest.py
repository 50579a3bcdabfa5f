"""MLflow fixtures for the pipeline tests: a real SQLite tracking store under each test's UNIROUTE_HOME."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests import needs
from uniroute.settings import Settings


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty MLflow SQLite store with its schema migrations applied (they take seconds; a copy is instant)."""
    mlflow = needs.module("mlflow")
    path = tmp_path_factory.mktemp("mlflow_template") / "mlflow.db"
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def tracking(settings: Settings, migrated_db: Path) -> tuple[str, Path]:
    """(tracking URI, artifact root) under a fresh UNIROUTE_HOME, its store a copy of the migrated empty one."""
    shutil.copyfile(migrated_db, settings.home / "mlflow.db")
    return settings.mlflow_uri, settings.mlflow_artifacts
