"""The servers uniroute runs beside its flows: a Prefect server and the MLflow UI on 127.0.0.1.

Their commands and environment (state under $UNIROUTE_HOME, offline, quiet) are shared by `make serve`
(deployments/service.py: background processes on fixed ports) and by `make run` and the tests, which start
them for the length of a `with` block on a free port.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

from uniroute.environment import ENVIRONMENT_FOLDER, linked_into_place
from uniroute.settings import Settings, apply_offline_environment

BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
PREFECT_DATABASE = "prefect.db"  # Prefect's SQLite database under PREFECT_HOME, its default location
# Warnings about a library's own code that a uniroute user can do nothing about, each matched by the start of its
# message: the MLflow UI imports starlette.middleware.wsgi, which Starlette deprecates (every `make serve` logged it).
QUIET_WARNINGS = ("ignore:starlette.middleware.wsgi is deprecated",)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:port now."""
    with socket.socket() as sock:
        # As the servers do: connections of a stopped server lingering in TIME_WAIT do not hold the port.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def answers(url: str) -> bool:
    """Whether an HTTP endpoint answers 200 right now."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def wait_for(url: str, seconds: float, proc: subprocess.Popen) -> None:
    """Poll an HTTP endpoint until it answers 200, the process dies, or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{Path(proc.args[0]).name} exited with code {proc.returncode} before {url} answered")
        if answers(url):
            return
        time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {seconds:.0f} s")


def server_environment(settings: Settings) -> dict[str, str]:
    """Environment for the servers and the runner: offline, quiet, state under UNIROUTE_HOME."""
    apply_offline_environment(settings)
    settings.prefect_home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        PREFECT_HOME=str(settings.prefect_home.resolve()),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_SERVER_API_HOST=HOST,
        PREFECT_UI_ENABLED="true",
        UNIROUTE_HOME=str(settings.home.resolve()),
        # MLflow's server-side jobs (GenAI trace scoring and archival) start seven worker processes that uniroute
        # never uses, and hold a stop for over 20 s.
        MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",  # `mlflow models serve` needs the venv's bin
        # The user's own filters come last: a later filter takes precedence.
        PYTHONWARNINGS=",".join(filter(None, [*QUIET_WARNINGS, env.get("PYTHONWARNINGS")])),
    )
    return env


def prefect_database_template() -> Path:
    """Where the environment keeps an empty Prefect database, migrated and with Prefect's block types registered, for
    the installed Prefect release (deployments/prefect_template.py makes it; `make env` runs that)."""
    return ENVIRONMENT_FOLDER / f"prefect-{version('prefect')}.db"


def seed_prefect_database(settings: Settings) -> bool:
    """Give a home that has no Prefect database a copy of the environment's template; whether it did.

    A Prefect server's first start in a home runs every migration Prefect ships and registers its block types: that
    start took 16-20 CPU-seconds here, a start on a database that had been started once 6-9 (2026-11-29). With the
    copy, the first start is a later one. The server still checks the database's revision when it starts, so a copy
    never skips a migration it needs; without a template (uniroute installed without `make env`) it migrates as before.
    """
    template, database = prefect_database_template(), settings.prefect_home / PREFECT_DATABASE
    if database.exists() or not template.exists():
        return False
    settings.prefect_home.mkdir(parents=True, exist_ok=True)
    return linked_into_place(database, lambda part: shutil.copyfile(template, part))


def seed_new_home(settings: Settings, service: str) -> None:
    """Before a server starts in a home: the database it would create, copied from the environment's template where
    the home has none (the Prefect server's; the MLflow UI's tracking store, as the first sync makes it)."""
    if service == "prefect-server":
        seed_prefect_database(settings)
    elif service == "mlflow-ui":
        from uniroute.pipeline.tracking.empty_store import seed_tracking_store  # `make stop` and `status` need none

        seed_tracking_store(settings.mlflow_uri, settings.mlflow_artifacts)


def prefect_server_command(port: int) -> tuple[list[str], str]:
    """`prefect server start` on 127.0.0.1:port (SQLite under PREFECT_HOME), and its API URL."""
    return [str(BIN / "prefect"), "server", "start", "--host", HOST, "--port", str(port)], f"http://{HOST}:{port}/api"


def mlflow_ui_command(settings: Settings, port: int) -> tuple[list[str], str]:
    """The MLflow UI over the tracking store under UNIROUTE_HOME on 127.0.0.1:port, and its URL."""
    settings.mlflow_artifacts.mkdir(parents=True, exist_ok=True)
    command = [str(BIN / "mlflow"), "ui", "--backend-store-uri", settings.mlflow_uri,
               "--default-artifact-root", str(settings.mlflow_artifacts.resolve()),
               "--host", HOST, "--port", str(port), "--workers", "1"]  # one user's UI; the cores are shared
    return command, f"http://{HOST}:{port}"


@contextmanager
def running(command: list[str], env: dict[str, str], log_path: Path, health_url: str):
    """A server subprocess that answers on health_url for the duration of the block, then is stopped."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(health_url, 90, proc)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def prefect_server(settings: Settings, log_path: Path, port: int | None = None):
    """A Prefect server for the block (a free port unless given); yields its API URL."""
    command, url = prefect_server_command(port or free_port())
    env = server_environment(settings)
    seed_new_home(settings, "prefect-server")
    with running(command, env, log_path, f"{url}/health"):
        yield url


@contextmanager
def mlflow_ui(settings: Settings, log_path: Path, port: int | None = None):
    """The MLflow UI for the block (a free port unless given); yields its URL."""
    command, url = mlflow_ui_command(settings, port or free_port())
    seed_new_home(settings, "mlflow-ui")
    with running(command, server_environment(settings), log_path, f"{url}/health"):
        yield url
