"""Ingestion tests start from an empty store copied from the session's (tests/conftest.py, empty_store): ingestion
is their subject, not the first open, which costs ~0.15 s CPU a store and is tested in tests/store/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import copy_of_empty_store


@pytest.fixture
def db_path(home: Path, empty_store: Path) -> Path:
    return copy_of_empty_store(empty_store, home / "uniroute.duckdb")
