"""A small real pool, built once and copied per test: synthetic logs (5 LLMs, 400 prompts), TF-IDF embeddings,
a built champion and one publication. Everything a hostile or unlucky user can poke at. MLflow is not in the
template (logging it is slow): the first operation that reconciles in a copy logs the copy's lineage from the
store, as reconciliation does for any store MLflow has not seen (test_relocate.py copies a home with MLflow)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import build, ingest, publish
from uniroute import store
from uniroute.settings import Settings
from uniroute.synth import write_synthetic_logs

N_PROMPTS = 400
N_MODELS = 5
NEWCOMER = "synth-llm-04"  # held back from the build; arrives later through onboarding
# Written by every state-changing run (its start, then how it ended): an audit log, not data.
AUDIT_TABLES = ("operation_events",)


def table_checksums(db_path: Path) -> dict[str, str]:
    """sha256 of every data table's rows (sorted), so a test can say the store did not change."""
    out = {}
    with store.opened(db_path, read_only=True) as con:
        tables = [r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_type = 'BASE TABLE' "
            "and table_schema = 'main' order by 1").fetchall()]
        for table in tables:
            if table in AUDIT_TABLES:
                continue
            rows = sorted(_row_text(row) for row in con.execute(f'select * from "{table}"').fetchall())
            out[table] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return out


def _row_text(row: tuple) -> str:
    """A row as text that changes whenever it does; a blob as its sha256 (repr of a 10 MB fitted embedder cost 0.1 s
    a checksum)."""
    return repr(tuple(hashlib.sha256(v).hexdigest() if isinstance(v, bytes) else v for v in row))


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def pool_template(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """(home, logs): a built and published home over all LLMs but NEWCOMER; logs holds every LLM's rows."""
    root = tmp_path_factory.mktemp("pool")
    summary = write_synthetic_logs(root / "logs", n_prompts=N_PROMPTS, n_models=N_MODELS, n_topics=4, seed=3,
                                   with_split=True)
    logs = pd.read_parquet(summary.logs_path)
    settings = Settings(home=root / "home")
    settings.home.mkdir()
    known = root / "known.parquet"
    logs[logs.model != NEWCOMER].to_parquet(known, index=False)
    ingest(settings.db_path, known, progress=False)
    build(settings.db_path, "tfidf")
    publish(settings.db_path, settings.published_dir)
    return settings.home, logs


@pytest.fixture
def pool(pool_template, tmp_path_factory, monkeypatch) -> Settings:
    """A private copy of the built home, set as UNIROUTE_HOME for the CLI."""
    home = tmp_path_factory.mktemp("home")
    shutil.copytree(pool_template[0], home, symlinks=True, dirs_exist_ok=True)
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    return Settings(home=home)


@pytest.fixture
def logs(pool_template) -> pd.DataFrame:
    return pool_template[1]
