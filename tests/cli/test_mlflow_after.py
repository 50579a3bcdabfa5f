"""`uniroute onboard` answers before MLflow: the command itself never imports MLflow, a detached follow-up logs the
new router version (named on stderr: where MLflow is, where the follow-up writes), and until it has, `status` and
`doctor --check` say what waits (operations/mlflow_after.py, docs/decisions/0410)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.cli.test_startup import PROBE, REPO
from tests.helpers import build, ingest, publish
from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.pool import registry
from uniroute.pipeline.status import pool_status
from uniroute.settings import Settings
from uniroute.synth import write_synthetic_logs

NEWCOMER = "synth-llm-03"
HEAVY_FOR_ONBOARD = {"mlflow", "torch", "prefect", "dask", "distributed", "sentence_transformers", "transformers"}


@pytest.fixture
def built(tmp_path: Path) -> tuple[Settings, Path]:
    """A built, published home without NEWCOMER (MLflow not logged yet), and NEWCOMER's validation results."""
    summary = write_synthetic_logs(tmp_path / "logs", n_prompts=300, n_models=4, n_topics=4, seed=3, with_split=True)
    logs = pd.read_parquet(summary.logs_path)
    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    logs[logs.model != NEWCOMER].to_parquet(tmp_path / "known.parquet", index=False)
    ingest(settings.db_path, tmp_path / "known.parquet", progress=False)
    build(settings.db_path, "tfidf")
    publish(settings.db_path, settings.published_dir)
    newcomer = logs[(logs.model == NEWCOMER) & (logs.split == "val")].drop(columns=["split"])
    newcomer.to_csv(tmp_path / "newcomer.csv", index=False)
    return settings, tmp_path / "newcomer.csv"


def _pending(db_path: Path) -> tuple[int, int]:
    with store.opened(db_path, read_only=True) as con:
        return tuple(store.query_row(con, "mlflow_pending_count"))  # type: ignore[return-value]  # one row


def _wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not Path(f"/proc/{pid}").exists(), f"the MLflow follow-up {pid} still runs after {timeout:.0f} s"


def test_onboard_answers_first_and_its_follow_up_logs_mlflow(built, monkeypatch):
    settings, results = built
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIROUTE_")}
    env |= {"UNIROUTE_HOME": str(settings.home), "UNIROUTE_EMBEDDER": "tfidf", "UNIROUTE_MLFLOW": "true",
            "UNIROUTE_MLFLOW_BACKGROUND": "true",
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", PROBE, "onboard", "--results", str(results)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"onboarded {NEWCOMER}" in done.stdout
    loaded = set(json.loads(done.stderr[done.stderr.rindex("\nLOADED ") + len("\nLOADED "):]))
    assert not loaded & HEAVY_FOR_ONBOARD, sorted(loaded & HEAVY_FOR_ONBOARD)  # MLflow is the follow-up's
    said = re.search(r"MLflow: logging in the background \(pid (\d+)\) to (\S+), .* output in (\S+);", done.stderr)
    assert said, done.stderr[-2000:]
    assert said.group(2) == settings.mlflow_uri and Path(said.group(3)) == settings.mlflow_sync_log

    _wait_gone(int(said.group(1)), timeout=240)
    log = settings.mlflow_sync_log.read_text()
    assert _pending(settings.db_path) == (0, 0), log[-2000:]  # every router version and publication logged
    with store.opened(settings.db_path, read_only=True) as con:
        champion = registry.champion_id(con)
    assert f"registered router {champion} in MLflow" in log
    assert f"alias champion names the store's champion {champion}" in log

    # What the store records while MLflow is off (retiring: a router version and its publication) is what
    # `status` and `doctor --check` then report as waiting.
    monkeypatch.setenv("UNIROUTE_HOME", str(settings.home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    assert CliRunner().invoke(app, ["retire", "synth-llm-00"], catch_exceptions=False).exit_code == 0
    assert _pending(settings.db_path) == (1, 1)
    status = pool_status(settings.home, settings.db_path, settings.published_dir, settings.inbox_dir)
    assert status.mlflow_pending == {"routers": 1, "publications": 1}
    assert any(line.startswith("mlflow     1 router version(s)") for line in status.lines())
    assert pool_status(settings.home, settings.db_path, settings.published_dir, settings.inbox_dir,
                       mlflow=False).mlflow_pending is None  # MLflow switched off: nothing waits for it
    monkeypatch.setenv("UNIROUTE_MLFLOW", "true")
    checked = CliRunner().invoke(app, ["doctor", "--check"], catch_exceptions=False)
    assert "pending  mlflow: 1 router version(s) and 1 publication(s) wait" in checked.output, checked.output
