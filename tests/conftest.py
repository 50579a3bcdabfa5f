"""Shared fixtures: isolated state folders, the shared datasets, single-threaded numerics."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from uniroute.settings import Settings, apply_offline_environment

# Tests never reach the network, and numerics stay single-threaded (the cores are shared).
apply_offline_environment()
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

SHARED_DATASETS = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh UNIROUTE_HOME."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings(home=home, shared_datasets=SHARED_DATASETS)


@pytest.fixture
def db_path(home: Path) -> Path:
    return home / "uniroute.duckdb"


@pytest.fixture(scope="session")
def built_embedders_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the whole session: the static and ONNX model files are built into it once (~45 s)."""
    return tmp_path_factory.mktemp("built_embedders")


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not SHARED_DATASETS.exists():
        pytest.skip(f"shared datasets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory):
    """One real Prefect API (server subprocess with the trigger service) for the whole session."""
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect_home"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        from prefect.settings import PREFECT_API_URL

        yield PREFECT_API_URL.value()
