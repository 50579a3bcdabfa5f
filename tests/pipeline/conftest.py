"""MLflow fixtures for the pipeline tests: a real SQLite tracking store under each test's UNIROUTE_HOME."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests import needs
from uniroute.settings import Settings


@pytest.fixture(scope="session")
def migrated_db() -> Path:
    """The environment's empty MLflow store, migrated (`make env` made it; made here if not), which new homes copy:
    MLflow's migrations take seconds, a copy is instant. Never written: tests copy it."""
    needs.module("mlflow")
    from deployments.mlflow_template import make_template

    return make_template()


@pytest.fixture
def tracking(settings: Settings, migrated_db: Path) -> tuple[str, Path]:
    """(tracking URI, artifact root) under a fresh UNIROUTE_HOME, its store a copy of the migrated empty one."""
    shutil.copyfile(migrated_db, settings.home / "mlflow.db")
    return settings.mlflow_uri, settings.mlflow_artifacts
