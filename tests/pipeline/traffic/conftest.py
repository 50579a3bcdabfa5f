"""A served home for the traffic tests: synthetic logs (4 LLMs, 300 prompts), a K-means champion over TF-IDF,
published; built once per session and copied for each test (each test's spool, inbox and store are its own)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import build, ingest, publish
from uniroute.settings import Settings
from uniroute.synth import write_synthetic_logs


@pytest.fixture(scope="session")
def traffic_template(tmp_path_factory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("traffic")
    summary = write_synthetic_logs(root / "logs", n_prompts=300, n_models=4, n_topics=4, seed=3, with_split=True)
    settings = Settings(home=root / "home", mlflow=False)
    settings.home.mkdir()
    ingest(settings.db_path, summary.logs_path, progress=False)
    build(settings.db_path, "tfidf", kinds=("kmeans",))
    publish(settings.db_path, settings.published_dir)
    prompts = pd.read_parquet(summary.logs_path).drop_duplicates("prompt_id").prompt.tolist()
    return settings.home, prompts


@pytest.fixture
def traffic_home(traffic_template, tmp_path, monkeypatch) -> Path:
    """A copy of the served home, as UNIROUTE_HOME (MLflow off: the store alone)."""
    home = tmp_path / "home"
    shutil.copytree(traffic_template[0], home, symlinks=True)
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    return home


@pytest.fixture
def prompts(traffic_template) -> list[str]:
    """Prompts like the training ones (the synthetic logs' texts)."""
    return traffic_template[1]


@pytest.fixture
def real_record(traffic_home, prompts) -> dict:
    """One decision record the served champion wrote (routed once, read back and removed from the spool): a
    template that refers to a real router, model and embedder, for tests that write records by hand."""
    from uniroute import operations
    from uniroute.operations.context import Context
    from uniroute.pipeline.serving.route import RoutingRequest

    settings = Settings(home=traffic_home, mlflow=False)
    operations.route(Context.of(settings), prompts[:1], RoutingRequest(lam=0.0))
    [path] = list(settings.spool_dir.glob("*.jsonl"))
    record = json.loads(path.read_text().splitlines()[0])
    path.unlink()
    return record
