"""`make serve`, `make status`, `make stop`: Prefect on 4200 and MLflow on 5000 as background processes.

`start` checks both ports first (a taken port is a one-line error naming the setting that moves it), then
starts the Prefect server, the MLflow UI and a runner serving every deployment of prefect.yaml, each in its
own process group with its log and pid file in $UNIROUTE_HOME/logs. `stop` stops exactly the processes those
pid files name (and their children), after checking each is still the process that was started. Ports:
UNIROUTE_PREFECT_PORT and UNIROUTE_MLFLOW_PORT.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from deployments.serve import (
    answers,
    mlflow_ui_command,
    port_is_free,
    prefect_server_command,
    server_environment,
    wait_for,
)
from uniroute.settings import Settings

REPO = Path(__file__).resolve().parent.parent
START_SECONDS = 180.0  # the Prefect server's first start migrates its SQLite database


@dataclass(frozen=True)
class Service:
    """One background process: how to start it, where it answers, where it logs."""

    name: str
    command: list[str]
    health_url: str | None  # None: the runner, which registers deployments instead of answering HTTP
    url: str | None
    port: int | None
    port_setting: str | None


def services(settings: Settings, with_runner: bool = True) -> list[Service]:
    """The processes `make serve` starts, in start order."""
    prefect, api_url = prefect_server_command(settings.prefect_port)
    mlflow, mlflow_url = mlflow_ui_command(settings, settings.mlflow_port)
    found = [
        Service("prefect-server", prefect, f"{api_url}/health", api_url.removesuffix("/api"), settings.prefect_port,
                "UNIROUTE_PREFECT_PORT"),
        Service("mlflow-ui", mlflow, f"{mlflow_url}/health", mlflow_url, settings.mlflow_port, "UNIROUTE_MLFLOW_PORT"),
    ]
    if with_runner:
        found.append(Service("runner", [sys.executable, "-m", "deployments.runner"], None, None, None, None))
    return found


def _pid_file(settings: Settings, name: str) -> Path:
    return settings.logs_dir / f"{name}.pid"


def _log_file(settings: Settings, name: str) -> Path:
    return settings.logs_dir / f"{name}.log"


def running_process(settings: Settings, name: str) -> psutil.Process | None:
    """The live process a pid file names, if it is still the one started (same pid and start time)."""
    path = _pid_file(settings, name)
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    try:
        proc = psutil.Process(record["pid"])
        if abs(proc.create_time() - record["create_time"]) < 1 and proc.status() != psutil.STATUS_ZOMBIE:
            return proc
    except psutil.NoSuchProcess:
        pass
    return None


def _api_url(settings: Settings) -> str:
    return prefect_server_command(settings.prefect_port)[1]


def _launch(settings: Settings, service: Service, env: dict[str, str]) -> subprocess.Popen:
    """Start a service in its own process group, logging to its file; write its pid file."""
    with open(_log_file(settings, service.name), "ab") as log:
        proc = subprocess.Popen(service.command, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    record = {"pid": proc.pid, "create_time": psutil.Process(proc.pid).create_time(), "command": service.command,
              "url": service.url, "port": service.port}
    _pid_file(settings, service.name).write_text(json.dumps(record) + "\n")
    return proc


def _wait_until_served(settings: Settings, proc: subprocess.Popen, expected: int, since: float) -> None:
    """Wait until the runner has (re)registered every deployment of prefect.yaml with the Prefect API."""
    import asyncio
    from datetime import UTC, datetime

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterTags
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def served() -> int:
        async with get_client() as client:
            found = await client.read_deployments(
                deployment_filter=DeploymentFilter(tags=DeploymentFilterTags(all_=["uniroute"])))
        # Deployments outlive a server restart in its database: count those the new runner updated.
        return sum(d.updated is not None and d.updated >= datetime.fromtimestamp(since, UTC) for d in found)

    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the runner exited with code {proc.returncode}")
        with temporary_settings({PREFECT_API_URL: _api_url(settings)}):
            if asyncio.run(served()) >= expected:
                return
        time.sleep(1)
    raise TimeoutError(f"the runner did not register {expected} deployments within {START_SECONDS:.0f} s")


def _tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def start(settings: Settings, with_runner: bool = True) -> int:
    """Start every service in the background; 0 when all answer, 1 (and nothing left running) otherwise."""
    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    wanted = services(settings, with_runner)
    already = [s.name for s in wanted if running_process(settings, s.name)]
    if already:
        print(f"error: already running: {', '.join(already)} (see `make status`; `make stop` stops them)",
              file=sys.stderr)
        return 1
    for service in wanted:
        if service.port is not None and not port_is_free(service.port):
            print(f"error: port {service.port} for {service.name} is taken by another program; set "
                  f"{service.port_setting} to a free port (e.g. {service.port_setting}={service.port + 1} "
                  f"make serve) or stop what holds it", file=sys.stderr)
            return 1
    env = server_environment(settings)
    from deployments.deployments import deployment_specs

    for service in wanted:
        print(f"starting {service.name} ...", flush=True)
        since = time.time() - 1
        proc = _launch(settings, service, env if service.health_url else env | {"PREFECT_API_URL": _api_url(settings)})
        try:
            if service.health_url:
                wait_for(service.health_url, START_SECONDS, proc)
            else:
                _wait_until_served(settings, proc, len(deployment_specs()), since)
        except (RuntimeError, TimeoutError) as exc:
            log = _log_file(settings, service.name)
            print(f"error: {service.name} did not start: {exc}; last lines of {log}:\n{_tail(log)}", file=sys.stderr)
            stop(settings, quiet=True)
            return 1
    status(settings)
    print(f"\nUse the Prefect CLI against it:  export PREFECT_API_URL={_api_url(settings)}")
    print("Stop everything:                make stop")
    return 0


def _stop_one(settings: Settings, name: str, timeout: float = 20.0) -> str:
    """Stop one service's process group; what happened, in a few words."""
    path = _pid_file(settings, name)
    if not path.exists():
        return ""
    proc = running_process(settings, name)
    path.unlink()
    if proc is None:
        return f"{name}: was not running (removed its stale pid file)"
    # start_new_session made the service the leader of its own group: the group is it and its children.
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except psutil.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)
        return f"{name}: killed (pid {proc.pid}) after {timeout:.0f} s"
    return f"{name}: stopped (pid {proc.pid})"


def stop(settings: Settings, quiet: bool = False) -> int:
    """Stop what `start` started, newest first."""
    said = [line for s in reversed(services(settings)) if (line := _stop_one(settings, s.name))]
    if not quiet:
        print("\n".join(said) if said else f"nothing to stop (no pid files in {settings.logs_dir})")
    return 0


def status(settings: Settings) -> int:
    """One line per service: running or not, pid, where it answers, its log."""
    for service in services(settings):
        proc = running_process(settings, service.name)
        if proc is None:
            state = "stopped"
        elif service.health_url is None:
            state = f"running (pid {proc.pid})"
        else:
            state = f"running (pid {proc.pid}), " + ("answering" if answers(service.health_url) else "NOT answering")
        where = service.url or "serves prefect.yaml's deployments"
        print(f"{service.name:<15} {state:<40} {where}")
    print(f"{'logs':<15} {settings.logs_dir.resolve()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--no-runner", action="store_true",
                        help="start only the servers (when a `prefect worker` runs the deployments instead)")
    args = parser.parse_args(argv)
    settings = Settings()
    if args.action == "start":
        return start(settings, with_runner=not args.no_runner)
    return stop(settings) if args.action == "stop" else status(settings)


if __name__ == "__main__":
    sys.exit(main())
