"""A flow run that fails in a served deployment's process says why, and nothing else: no leak lines at its exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.log_noise import noisy_lines

REPO = Path(__file__).resolve().parents[2]
PUBLISH = "uniroute-publish/every-15-minutes"
# It starts a runner against the session's Prefect API: one at a time, on one worker (tests/conftest.py).
pytestmark = pytest.mark.serial


@pytest.mark.slow
def test_a_failed_flow_run_process_exits_without_nanobind_leak_lines(prefect_harness, tmp_path):
    """Publishing before any build fails after the store is open: the failing run's exception used to keep the
    DuckDB connection alive to the process's exit, where DuckDB's bindings printed some 80 "nanobind: leaked" lines.
    """
    from prefect.deployments import run_deployment

    from deployments.deployments import wait_until_served

    env = {**os.environ, "PREFECT_API_URL": prefect_harness, "PYTHONPATH": str(REPO),
           "UNIROUTE_HOME": str(tmp_path / "home"), "PREFECT_RUNNER_POLL_FREQUENCY": "1"}
    log_path = tmp_path / "runner.log"
    with open(log_path, "wb") as log:
        runner = subprocess.Popen([sys.executable, "-m", "deployments.runner", "--only", PUBLISH], cwd=REPO, env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_served(PUBLISH)
        run = run_deployment(PUBLISH, timeout=240)
        assert run.state is not None and run.state.is_failed(), (run.state, log_path.read_text())
    finally:
        runner.terminate()
        runner.wait(timeout=30)
    said = log_path.read_text()
    assert "NoRouter: no champion router in the store" in said, said[-3000:]  # it failed where it should
    assert not [line for line in noisy_lines(said) if "nanobind" in line], said[-3000:]
