"""A full disk: the write that finds no space gives one line naming the file, leaves no half-written snapshot and
no orphan MLflow artifact, ends its MLflow run FAILED (never RUNNING for ever), and changes nothing in the store.

No disk is filled: uniroute.faults.disk_full raises the OSError a full device gives (ENOSPC) at the point that
UNIROUTE_DISK_FULL_AT names, as the crash tests stop the process at a named step.
"""

from __future__ import annotations

import os
from pathlib import Path

import mlflow
from typer.testing import CliRunner

from tests.robustness.conftest import table_checksums
from uniroute.cli import app
from uniroute.faults import DISK_FULL_ENV

runner = CliRunner()


def test_a_full_disk_while_publishing_is_one_line_and_leaves_no_half_snapshot(pool, monkeypatch):
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    published = sorted(os.listdir(pool.published_dir))
    before = table_checksums(pool.db_path)
    monkeypatch.setenv(DISK_FULL_ENV, "snapshot:write")
    result = runner.invoke(app, ["publish", "--force"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: no space left on the device of {pool.published_dir}/.")
    assert lines[0].endswith("(nothing was published; the store is unchanged): free space there and run it again")
    assert sorted(os.listdir(pool.published_dir)) == published  # no staging folder holding the space
    assert table_checksums(pool.db_path) == before
    monkeypatch.delenv(DISK_FULL_ENV)
    assert runner.invoke(app, ["publish", "--force"]).exit_code == 0  # space freed: it publishes


def _runs(home: Path) -> list:
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{home / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("uniroute")
    return [] if experiment is None else client.search_runs([experiment.experiment_id])


def test_a_full_disk_while_logging_to_mlflow_fails_the_run_and_keeps_no_artifact(pool, monkeypatch):
    monkeypatch.setenv("UNIROUTE_MLFLOW", "true")
    before = table_checksums(pool.db_path)
    monkeypatch.setenv(DISK_FULL_ENV, "mlflow:artifacts")
    result = runner.invoke(app, ["doctor"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    broken = [x for x in result.stdout.splitlines() if x.startswith("broken")]
    assert len(broken) == 1 and broken[0].startswith(f"broken   mlflow: no space left on the device of file://{pool.home}/")
    assert broken[0].endswith("(MLflow did not log the rest; the store is unchanged): free space there and run it "
                              "again (`uniroute doctor` logs what is missing)")
    assert "Traceback" not in result.output
    runs = _runs(pool.home)
    assert [r.info.status for r in runs] == ["FAILED"]  # ended, not RUNNING for ever
    artifacts = Path(runs[0].info.artifact_uri.removeprefix("file://"))
    assert not artifacts.exists()  # no orphan artifact folder holding the space
    assert table_checksums(pool.db_path) == before  # nothing recorded as logged
    monkeypatch.delenv(DISK_FULL_ENV)
    assert runner.invoke(app, ["doctor"]).exit_code == 0  # space freed: the next sync logs it
    assert runner.invoke(app, ["doctor", "--check"]).stdout.count("broken") == 0
    assert sorted(r.info.status for r in _runs(pool.home))[-1] == "FINISHED"


def test_route_on_a_full_disk_still_answers_and_says_in_one_line_its_decisions_were_not_recorded(pool, monkeypatch):
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    spool = pool.spool_dir
    spooled = sorted(os.listdir(spool)) if spool.exists() else []
    before = table_checksums(pool.db_path)
    monkeypatch.setenv(DISK_FULL_ENV, "spool:write")
    result = runner.invoke(app, ["route", "--budget", "0.5", "what is two and two"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "synth-llm-" in result.stdout  # the answer matters more than its record
    # besides the line that says which prompt mix the --budget was calibrated on, one warning line
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("budget calibrated on")]
    assert len(lines) == 1, result.stderr
    assert f"decisions not recorded: cannot write the spool {spool} (No space left on device)" in lines[0]
    assert sorted(os.listdir(spool)) == spooled  # no empty or half-written .part left holding the space
    assert table_checksums(pool.db_path) == before
    monkeypatch.delenv(DISK_FULL_ENV)
    result = runner.invoke(app, ["route", "--budget", "0.5", "what is two and two"], catch_exceptions=False)
    assert result.exit_code == 0 and result.stderr.startswith("budget calibrated on"), result.output
    assert "not recorded" not in result.stderr
    assert len(os.listdir(spool)) == len(spooled) + 1  # space freed: recorded again
