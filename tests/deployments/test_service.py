"""`make serve` / `make status` / `make stop`: background servers on configurable ports, stopped exactly.

Tests never bind 4200 or 5000 (someone may run a server there): every port here is a free one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from deployments.serve import free_port, port_is_free
from deployments.service import SERVICE_ENV, main, running_process, serve_lock, start, status, stop
from tests import needs
from tests.log_noise import noisy_lines, noisy_logs
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


def test_the_gateway_is_left_out_in_one_line_without_deployments_or_a_published_router(home, capsys):
    settings = Settings(home=home, prefect_port=free_port(), mlflow_port=free_port(), gateway_port=free_port())
    with socket.socket() as holder:  # nothing starts: the check of the ports refuses after the gateway's line
        holder.bind(("127.0.0.1", settings.mlflow_port))
        holder.listen()
        assert start(settings) == 1
        assert capsys.readouterr().out == (f"gateway: not started: no deployments file at {home / 'deployments.yaml'} "
                                           "(a LiteLLM model_list saying how each pool model is called: "
                                           "docs/operate.md)\n")
        settings.deployments_file.write_text("model_list: []\n")
        assert start(settings) == 1
        assert capsys.readouterr().out.startswith(f"gateway: not started: nothing published in {home / 'published'}")


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


# -o: never rebuild the virtual environment's stamps (the environment may be shared).
MAKE = ["make", "--no-print-directory", "-o", ".venv/.installed", "-o", ".venv/.prepared"]


def _make(target: str, env: dict[str, str], timeout: float = 420) -> subprocess.CompletedProcess:
    return subprocess.run([*MAKE, target], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status


@pytest.mark.slow
def test_make_serve_status_stop(tmp_path):
    needs.program("make")
    prefect_port, mlflow_port = _ports()
    home = tmp_path / "home"
    env = {**os.environ, "UNIROUTE_HOME": str(home), "UNIROUTE_PREFECT_PORT": str(prefect_port),
           "UNIROUTE_MLFLOW_PORT": str(mlflow_port), "UNIROUTE_GATEWAY_PORT": str(free_port()),
           "PYTHONPATH": str(REPO)}
    env.pop("PREFECT_API_URL", None)
    # Two at once: one starts the services, the other refuses (the lock, or the services it finds running).
    racing = [subprocess.Popen([*MAKE, "serve"], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [(proc.wait(timeout=420), *proc.communicate()) for proc in racing]
    served = next((subprocess.CompletedProcess([], code, out, err) for code, out, err in outputs if code == 0),
                  subprocess.CompletedProcess([], 1, "", str(outputs)))
    try:
        assert served.returncode == 0, served.stdout + served.stderr
        refused = [err for code, _, err in outputs if code != 0]
        assert len(refused) == 1 and re.search(r"error: (another `make serve` \(pid \d+\) is starting|already running)",
                                               refused[0]), outputs
        assert f"export PREFECT_API_URL=http://127.0.0.1:{prefect_port}/api" in served.stdout
        assert f"gateway: not started: no deployments file at {home / 'deployments.yaml'}" in served.stdout
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
        assert again.returncode != 0 and re.search(r"error: already running: prefect-server \(pid \d+\), mlflow-ui "
                                                   r"\(pid \d+\), runner \(pid \d+\)", again.stderr), again.stderr
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
    assert _make("status", env).stdout.count("stopped") == 4
    # The servers' and the runner's logs, from start to stop: no traceback, warning or "never awaited" coroutine.
    assert noisy_logs(home / "logs") == {}


def _drop_waiting_runs(deployment: str) -> None:
    """Delete the deployment's scheduled and pending flow runs: other tests on the shared harness fire its trigger,
    and a runner started here would run one (its query, interrupted by the SIGTERM, puts a traceback in the log)."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    async def drop() -> None:
        async with get_client() as client:
            waiting = FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(
                any_=[StateType.SCHEDULED, StateType.PENDING])))
            named = DeploymentFilter(name=DeploymentFilterName(any_=[deployment.split("/", 1)[1]]))
            for run in await client.read_flow_runs(flow_run_filter=waiting, deployment_filter=named):
                await client.delete_flow_run(run.id)

    asyncio.run(drop())


def _registered_since(deployment: str, since: float) -> bool:
    """Whether a runner (re)registered `flow/deployment` with the API after since (epoch seconds)."""
    import asyncio
    from datetime import UTC, datetime

    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    async def check() -> bool:
        async with get_client() as client:
            try:
                found = await client.read_deployment_by_name(deployment)
            except ObjectNotFound:
                return False
        return found.updated is not None and found.updated >= datetime.fromtimestamp(since, UTC)

    return asyncio.run(check())


def test_sigterm_stops_the_runner_at_once_and_quietly(prefect_harness, tmp_path):
    from deployments.deployments import ONBOARDING

    env = {**os.environ, "PREFECT_API_URL": prefect_harness, "PYTHONPATH": str(REPO)}
    _drop_waiting_runs(ONBOARDING)
    since = time.time() - 1
    with open(tmp_path / "runner.log", "wb") as log:
        runner = subprocess.Popen([sys.executable, "-m", "deployments.runner", "--only", ONBOARDING], cwd=REPO,
                                  env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while not _registered_since(ONBOARDING, since):
                assert runner.poll() is None and time.monotonic() < deadline, (tmp_path / "runner.log").read_text()
                time.sleep(0.5)
            time.sleep(3)  # into its polling loop, where Prefect's handler dropped the astop coroutine
            runner.send_signal(signal.SIGTERM)
            assert runner.wait(timeout=30) == 0
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
    said = (tmp_path / "runner.log").read_text()
    assert "never awaited" not in said and "Traceback" not in said, said


def test_a_second_serve_while_one_starts_refuses_in_one_line(home, capsys):
    prefect_port, mlflow_port = _ports()
    settings = Settings(home=home, prefect_port=prefect_port, mlflow_port=mlflow_port)
    with serve_lock(settings) as held, socket.socket() as taken:
        assert held
        taken.bind(("127.0.0.1", prefect_port))  # were the lock ignored, nothing would start all the same
        taken.listen()
        assert start(settings) == 1
    assert capsys.readouterr().err == (f"error: another `make serve` (pid {os.getpid()}) is starting this home's "
                                       f"services ({home.resolve()}); wait for it, then `make status`\n")
    assert not list(settings.logs_dir.glob("*.pid"))
    with serve_lock(settings) as held:  # released
        assert held


_SERVICE_WITH_A_CHILD = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
                         "'import time; time.sleep(120)']); print('up', flush=True); time.sleep(120)")


def _marked(home: Path, name: str) -> subprocess.Popen:
    """A process marked as `name` of home, as `start` marks what it starts, with a child; not in any pid file."""
    env = {**os.environ, SERVICE_ENV: name, "UNIROUTE_HOME": str(home.resolve())}
    proc = subprocess.Popen([sys.executable, "-c", _SERVICE_WITH_A_CHILD], env=env, stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert proc.stdout.readline() == "up\n"
    return proc


def test_a_service_missing_from_its_pid_file_is_reported_refused_and_stopped(home, tmp_path, capsys):
    settings = Settings(home=home)
    stray = _marked(home, "runner")
    elsewhere = _marked(tmp_path / "other-home", "runner")  # another home's: never touched
    try:
        child = psutil.Process(stray.pid).children()[0]
        status(settings)
        said = capsys.readouterr().out
        assert f"running (pid {stray.pid}), 1 not in its pid file" in said and said.count("stopped") == 3, said
        assert start(settings) == 1
        assert capsys.readouterr().err == (f"error: already running: runner (pid {stray.pid}) (see `make status`; "
                                           "`make stop` stops them)\n")
        assert stop(settings) == 0
        assert capsys.readouterr().out == f"runner: stopped (pid {stray.pid})\n"
        stray.wait(timeout=10)  # gone (stop reaped it: its own child here)
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
        assert elsewhere.poll() is None
        status(settings)
        assert capsys.readouterr().out.count("stopped") == 4
    finally:
        for proc in (stray, elsewhere):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_setting_that_does_not_parse_is_one_line(home, monkeypatch, capsys):
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_PREFECT_PORT", "four-two-hundred")
    assert main(["status"]) == 1
    assert capsys.readouterr().err == ("error: UNIROUTE_PREFECT_PORT='four-two-hundred': Input should be a valid "
                                       "integer, unable to parse string as an integer; set it to a valid value or "
                                       "unset it\n")


def _listening_ports(pid: int) -> set[int]:
    return {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}


def test_sigterm_while_a_flow_run_holds_its_control_connection_is_quiet(prefect_harness, tmp_path):
    """The end of `make run`: SIGTERM reaches the runner while a finished flow run's process still holds its control
    connection. The stop used to cancel the connection's handler mid-read, and asyncio logged a CancelledError
    traceback. A raw connection to every port the runner listens on stands in for that process."""
    from deployments.deployments import ONBOARDING

    env = {**os.environ, "PREFECT_API_URL": prefect_harness, "PYTHONPATH": str(REPO)}
    since = time.time() - 1
    log_path = tmp_path / "runner.log"
    with open(log_path, "wb") as log, contextlib.ExitStack() as held:
        runner = subprocess.Popen([sys.executable, "-m", "deployments.runner", "--only", ONBOARDING], cwd=REPO,
                                  env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            # Registered, then started: the control channel listens once the runner's loop runs.
            while not _registered_since(ONBOARDING, since) or not (ports := _listening_ports(runner.pid)):
                assert runner.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.5)
            for port in ports:
                held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
            time.sleep(1)  # the runner accepts them: each has a handler waiting to read
            runner.send_signal(signal.SIGTERM)
            assert runner.wait(timeout=30) == 0
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
    said = log_path.read_text()
    assert not noisy_lines(said) and "ERROR" not in said, said


def test_serve_starts_the_gateway_on_its_port_status_shows_it_and_stop_finishes_its_records(home, monkeypatch,
                                                                                            capsys):
    needs.module("litellm")
    openai = needs.module("openai")
    from deployments.backends import Backend
    from tests.gateway.harness import KEY_VAR, portable_home

    monkeypatch.setenv(KEY_VAR, "sk-serve-test-key")
    backends = {name: Backend(name).start() for name in ("cheap", "big")}
    portable_home(home, backends)
    settings = Settings(home=home, gateway_port=free_port())
    url = f"http://127.0.0.1:{settings.gateway_port}/v1"
    try:
        assert start(settings, only=["gateway"]) == 0, capsys.readouterr().err
        said = capsys.readouterr().out
        assert re.search(rf"gateway +running \(pid \d+\), answering +{re.escape(url)}\n", said), said
        assert "prefect-server  stopped" in said  # only the gateway was asked for
        answer = openai.OpenAI(base_url=url, api_key="unused", max_retries=0).chat.completions.create(
            model="uniroute", messages=[{"role": "user", "content": "a hard proof"}])
        assert answer.model in ("cheap", "big")
        pid = json.loads((settings.logs_dir / "gateway.pid").read_text())["pid"]
        assert start(settings, only=["gateway"]) == 1
        assert f"error: already running: gateway (pid {pid})" in capsys.readouterr().err
        status(settings)
        assert re.search(rf"gateway +running \(pid {pid}\), answering +{re.escape(url)}", capsys.readouterr().out)
    finally:
        stop(settings)
        for backend in backends.values():
            backend.kill()
    assert capsys.readouterr().out == f"gateway: stopped (pid {pid})\n"
    assert port_is_free(settings.gateway_port) and not (settings.logs_dir / "gateway.pid").exists()
    spool = settings.spool_dir
    assert not list(spool.glob("*.part")) and len(list(spool.glob("*.jsonl"))) == 1  # its record, finished
    log = (settings.logs_dir / "gateway.log").read_text()
    assert "deployment coverage: every pool model (2) has a deployment" in log and "sk-serve-test-key" not in log
