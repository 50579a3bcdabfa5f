"""`make serve` / `make status` / `make stop`: background servers on configurable ports, stopped exactly.

Tests never bind 4200 or 5000 (someone may run a server there): every port here is a free one.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import psutil
import pytest

from deployments.serve import free_port, port_is_free
from deployments.service import running_process, start, stop
from tests import needs
from uniroute.settings import Settings

REPO = Path(__file__).resolve().parents[2]
# They start servers on free ports: one at a time, on one worker (tests/conftest.py groups `serial` tests).
pytestmark = pytest.mark.serial
DEFAULT_PORTS = {4200, 5000}


def _ports() -> tuple[int, int]:
    ports = free_port(), free_port()
    assert not DEFAULT_PORTS & set(ports) and ports[0] != ports[1]
    return ports


def test_a_taken_port_is_a_clear_error_and_starts_nothing(home, capsys):
    prefect_port, mlflow_port = _ports()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", mlflow_port))
        holder.listen()
        assert not port_is_free(mlflow_port)
        code = start(Settings(home=home, prefect_port=prefect_port, mlflow_port=mlflow_port))
    assert code == 1
    assert (f"error: port {mlflow_port} for mlflow-ui is taken by another program; set UNIROUTE_MLFLOW_PORT "
            f"to a free port") in capsys.readouterr().err
    assert not list((home / "logs").glob("*.pid"))


def test_stop_leaves_alone_a_process_that_merely_reuses_a_recorded_pid(home, capsys):
    settings = Settings(home=home)
    settings.logs_dir.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = psutil.Process(other.pid).create_time()
        record = {"pid": other.pid, "create_time": started - 100, "command": ["x"], "url": None, "port": None}
        (settings.logs_dir / "runner.pid").write_text(json.dumps(record))
        assert running_process(settings, "runner") is None
        assert stop(settings) == 0
        assert "runner: was not running (removed its stale pid file)" in capsys.readouterr().out
        assert other.poll() is None  # still alive
        assert not (settings.logs_dir / "runner.pid").exists()
    finally:
        other.kill()
        other.wait()


def _make(target: str, env: dict[str, str], timeout: float = 420) -> subprocess.CompletedProcess:
    # -o: never rebuild the virtual environment's stamp (the environment may be shared).
    return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", target], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status


@pytest.mark.slow
def test_make_serve_status_stop(tmp_path):
    needs.program("make")
    prefect_port, mlflow_port = _ports()
    home = tmp_path / "home"
    env = {**os.environ, "UNIROUTE_HOME": str(home), "UNIROUTE_PREFECT_PORT": str(prefect_port),
           "UNIROUTE_MLFLOW_PORT": str(mlflow_port), "PYTHONPATH": str(REPO)}
    env.pop("PREFECT_API_URL", None)
    served = _make("serve", env)
    try:
        assert served.returncode == 0, served.stdout + served.stderr
        assert f"export PREFECT_API_URL=http://127.0.0.1:{prefect_port}/api" in served.stdout
        status = _make("status", env).stdout
        assert status.count("running (pid") == 3 and status.count("answering") == 2, status
        assert f"http://127.0.0.1:{mlflow_port}" in status and str(home / "logs") in status
        assert _get(f"http://127.0.0.1:{prefect_port}/api/health") == _get(f"http://127.0.0.1:{mlflow_port}/health")
        listed = subprocess.run([str(Path(sys.executable).parent / "prefect"), "deployment", "ls"], env=env | {
            "PREFECT_API_URL": f"http://127.0.0.1:{prefect_port}/api", "COLUMNS": "200"},
            capture_output=True, text=True, timeout=120).stdout
        for name in ("uniroute-nightly-build/nightly", "uniroute-publish/every-15-minutes",
                     "uniroute-ingest-inbox/inbox-watcher", "uniroute-onboard/on-results-landed"):
            assert name in listed, listed
        again = _make("serve", env)
        assert again.returncode != 0 and "error: already running: prefect-server, mlflow-ui, runner" in again.stderr
        elsewhere = _make("serve", env | {"UNIROUTE_HOME": str(tmp_path / "other")})
        assert f"error: port {prefect_port} for prefect-server is taken" in elsewhere.stderr
        pids = [json.loads(p.read_text())["pid"] for p in sorted((home / "logs").glob("*.pid"))]
        assert len(pids) == 3 and {p.name for p in (home / "logs").glob("*.log")} == {
            "prefect-server.log", "mlflow-ui.log", "runner.log"}
    finally:
        stopped = _make("stop", env)
    assert stopped.returncode == 0 and stopped.stdout.count(": stopped (pid") == 3, stopped.stdout
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)
    assert port_is_free(prefect_port) and port_is_free(mlflow_port)
    assert "nothing to stop" in _make("stop", env).stdout
    assert _make("status", env).stdout.count("stopped") == 3
