"""`make serve`, `make status`, `make stop`: Prefect on 4200, MLflow on 5000 and the gateway on 4000 as
background processes.

`start` holds an exclusive lock (logs/serve.lock) while it starts anything, so a second `make serve` at the
same time refuses in one line instead of starting a second runner (which would run every scheduled flow
twice); it refuses too, naming the pids, when this home's services already run. It checks their ports (a taken
port is a one-line error naming the setting that moves it), then starts the Prefect server, the MLflow UI and a
runner serving every deployment of prefect.yaml, then the gateway (`uniroute gateway` over
$UNIROUTE_HOME/deployments.yaml; left out, in one line saying why, while that file or a published router is
missing), each in its own process group with its log and pid file in
$UNIROUTE_HOME/logs, and each marked in its environment (UNIROUTE_SERVICE, UNIROUTE_HOME). `stop` stops the
processes those pid files name after checking each is still the process that was started, and any other
process marked as this home's service (one whose pid file was lost or overwritten), with their process groups
and children; `status` reports them all, so it never says stopped while one lives. Ports:
UNIROUTE_PREFECT_PORT, UNIROUTE_MLFLOW_PORT and UNIROUTE_GATEWAY_PORT.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from deployments.serve import (
    HOST,
    answers,
    mlflow_ui_command,
    port_is_free,
    prefect_server_command,
    seed_new_home,
    server_environment,
    wait_for,
)
from uniroute.settings import Settings, SettingsError, settings_from_environment

REPO = Path(__file__).resolve().parent.parent
START_SECONDS = 180.0  # a Prefect server's first start migrates its SQLite database (without `make env`'s copy)
SERVICE_ENV = "UNIROUTE_SERVICE"  # names the service a process was started as (its children inherit it)
LOCK_FILE = "serve.lock"


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
    found.append(gateway_service(settings))
    return found


def gateway_service(settings: Settings) -> Service:
    """`uniroute gateway` over the home's deployments file on UNIROUTE_GATEWAY_PORT."""
    port = settings.gateway_port
    command = [sys.executable, "-m", "uniroute", "gateway", "--deployments", str(settings.deployments_file.resolve()),
               "--host", HOST, "--port", str(port)]
    return Service("gateway", command, f"http://{HOST}:{port}/v1/models", f"http://{HOST}:{port}/v1", port,
                   "UNIROUTE_GATEWAY_PORT")


def gateway_left_out(settings: Settings) -> str | None:
    """Why `make serve` cannot start the gateway in this home (one line), or None when it can."""
    from uniroute.pipeline.serving.snapshot import current_version

    if not settings.deployments_file.exists():
        return (f"no deployments file at {settings.deployments_file} (a LiteLLM model_list saying how each pool model "
                "is called: docs/operate.md)")
    if current_version(settings.published_dir) is None:
        return f"nothing published in {settings.published_dir} yet (a build, then the publish flow, publishes a router)"
    return None


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


def _marked_home(proc: psutil.Process) -> tuple[str, str] | None:
    """(service name, UNIROUTE_HOME) a process was started with by `start`, or None for any other process."""
    try:
        env = proc.environ()
    except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess, OSError):
        return None
    return (env[SERVICE_ENV], env.get("UNIROUTE_HOME", "")) if SERVICE_ENV in env else None


def service_processes(settings: Settings) -> dict[str, list[psutil.Process]]:
    """Every live process started as one of this home's services, by service: the pid files' processes and any
    other process marked with this home (the topmost of each tree; its children go with it)."""
    home = str(settings.home.resolve())
    found: dict[str, dict[int, psutil.Process]] = {}
    for service in services(settings):
        if (proc := running_process(settings, service.name)) is not None:
            found.setdefault(service.name, {})[proc.pid] = proc
    marked = {}
    for proc in psutil.process_iter():
        if proc.pid != os.getpid() and (mark := _marked_home(proc)) is not None and mark[1] == home:
            marked[proc.pid] = (mark[0], proc)
    for pid, (name, proc) in marked.items():
        with contextlib.suppress(psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE and proc.ppid() not in marked:
                found.setdefault(name, {})[pid] = proc
    return {name: sorted(procs.values(), key=lambda p: p.pid) for name, procs in found.items()}


@contextlib.contextmanager
def serve_lock(settings: Settings) -> Iterator[bool]:
    """Whether this process holds the home's serve lock (exclusive, released when the block ends)."""
    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    with open(settings.logs_dir / LOCK_FILE, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock_holder(settings: Settings) -> str:
    with contextlib.suppress(OSError):
        return (settings.logs_dir / LOCK_FILE).read_text().strip() or "?"  # "?": it has not written it yet
    return "?"


def _pids(procs: list[psutil.Process]) -> str:
    return f"pid {procs[0].pid}" if len(procs) == 1 else "pids " + ", ".join(str(p.pid) for p in procs)


def _api_url(settings: Settings) -> str:
    return prefect_server_command(settings.prefect_port)[1]


def _launch(settings: Settings, service: Service, env: dict[str, str]) -> subprocess.Popen:
    """Start a service in its own process group, logging to its file; write its pid file."""
    with open(_log_file(settings, service.name), "ab") as log:
        proc = subprocess.Popen(service.command, env=env | {SERVICE_ENV: service.name}, cwd=REPO, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
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


def start(settings: Settings, with_runner: bool = True, only: Sequence[str] = ()) -> int:
    """Start every service (or those named in only) in the background; 0 when all answer, 1 (and nothing left
    running) otherwise."""
    with serve_lock(settings) as held:
        if not held:
            print(f"error: another `make serve` (pid {_lock_holder(settings)}) is starting this home's services "
                  f"({settings.home.resolve()}); wait for it, then `make status`", file=sys.stderr)
            return 1
        return _start(settings, with_runner, only)


def _start(settings: Settings, with_runner: bool, only: Sequence[str]) -> int:
    """start's work, under the serve lock."""
    wanted = [s for s in services(settings, with_runner) if not only or s.name in only]
    if any(s.name == "gateway" for s in wanted) and (reason := gateway_left_out(settings)) is not None:
        print(f"gateway: not started: {reason}", flush=True)
        wanted = [s for s in wanted if s.name != "gateway"]
    running = {name: procs for name, procs in service_processes(settings).items() if not only or name in only}
    if running:
        names = [s.name for s in services(settings) if s.name in running]
        print(f"error: already running: {', '.join(f'{n} ({_pids(running[n])})' for n in names)} "
              "(see `make status`; `make stop` stops them)", file=sys.stderr)
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
        seed_new_home(settings, service.name)
        proc = _launch(settings, service, env if service.health_url else env | {"PREFECT_API_URL": _api_url(settings)})
        try:
            if service.health_url:
                wait_for(service.health_url, START_SECONDS, proc)
            else:
                _wait_until_served(settings, proc, len(deployment_specs()), since)
        except (RuntimeError, TimeoutError) as exc:
            log = _log_file(settings, service.name)
            print(f"error: {service.name} did not start: {exc}; last lines of {log}:\n{_tail(log)}", file=sys.stderr)
            stop(settings, quiet=True, only=[s.name for s in wanted])
            return 1
    status(settings)
    print(f"\nUse the Prefect CLI against it:  export PREFECT_API_URL={_api_url(settings)}")
    print("Stop everything:                make stop")
    return 0


def _signal_tree(proc: psutil.Process, children: list[psutil.Process], sig: signal.Signals) -> None:
    """sig to a service's process group (start_new_session made it the leader: it and its children) and to each
    child that left the group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, sig)
    for each in [proc, *children]:
        with contextlib.suppress(psutil.Error):
            each.send_signal(sig)


def _stop_tree(name: str, proc: psutil.Process, timeout: float) -> str:
    """Stop one service process and its children; what happened, in a few words."""
    try:
        children = proc.children(recursive=True)
    except psutil.NoSuchProcess:
        return f"{name}: stopped (pid {proc.pid})"
    _signal_tree(proc, children, signal.SIGTERM)
    _, alive = psutil.wait_procs([proc, *children], timeout=timeout)
    if alive:
        _signal_tree(proc, [p for p in alive if p.pid != proc.pid], signal.SIGKILL)
        psutil.wait_procs(alive, timeout=timeout)
        return f"{name}: killed (pid {proc.pid}) after {timeout:.0f} s"
    return f"{name}: stopped (pid {proc.pid})"


def stop(settings: Settings, quiet: bool = False, timeout: float = 20.0, only: Sequence[str] = ()) -> int:
    """Stop every process started as this home's service (pid files and marked ones; those named in only, when
    given), newest service first."""
    running = service_processes(settings)
    said = []
    for service in reversed([s for s in services(settings) if not only or s.name in only]):
        path = _pid_file(settings, service.name)
        procs = running.get(service.name, [])
        if path.exists() and running_process(settings, service.name) is None:
            said.append(f"{service.name}: was not running (removed its stale pid file)")
        said += [_stop_tree(service.name, proc, timeout) for proc in procs]
        path.unlink(missing_ok=True)
    if not quiet:
        print("\n".join(said) if said else f"nothing to stop (no service of {settings.home.resolve()} runs)")
    return 0


def status(settings: Settings) -> int:
    """One line per service: running or not, pid, where it answers, its log."""
    running = service_processes(settings)
    for service in services(settings):
        procs = running.get(service.name, [])
        recorded = running_process(settings, service.name)
        if not procs:
            state = "stopped"
        else:
            state = f"running ({_pids(procs)})"
            if recorded is None or len(procs) > 1:  # e.g. a second runner: `make stop` stops it too
                strays = [p.pid for p in procs if recorded is None or p.pid != recorded.pid]
                state += f", {len(strays)} not in its pid file"
            if service.health_url is not None:
                state += ", " + ("answering" if answers(service.health_url) else "NOT answering")
        where = service.url or "serves prefect.yaml's deployments"
        print(f"{service.name:<15} {state:<40} {where}")
    print(f"{'logs':<15} {settings.logs_dir.resolve()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--no-runner", action="store_true",
                        help="start only the servers (when a `prefect worker` runs the deployments instead)")
    parser.add_argument("--only", action="append", default=[], metavar="SERVICE",
                        choices=["prefect-server", "mlflow-ui", "runner", "gateway"],
                        help="start or stop this service only (repeatable), e.g. the gateway after its "
                             "deployments file changed: stop --only gateway, then start --only gateway")
    args = parser.parse_args(argv)
    try:
        settings = settings_from_environment()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.action == "start":
        return start(settings, with_runner=not args.no_runner, only=args.only)
    return stop(settings, only=args.only) if args.action == "stop" else status(settings)


if __name__ == "__main__":
    sys.exit(main())
