"""`make serve`: a local Prefect server and MLflow UI on 127.0.0.1, and every deployment served.

Everything stays under $UNIROUTE_HOME (Prefect's SQLite database in prefect/, MLflow in mlflow.db);
telemetry is off. Ctrl-C stops the servers.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from uniroute.settings import Settings, apply_offline_environment

BIN = Path(sys.executable).parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, seconds: float, proc: subprocess.Popen) -> None:
    """Poll an HTTP endpoint until it answers 200, the process dies, or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with code {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
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
        PREFECT_SERVER_API_HOST="127.0.0.1",
        PREFECT_UI_ENABLED="true",
        UNIROUTE_HOME=str(settings.home.resolve()),
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",  # `mlflow models serve` needs the venv's bin
    )
    return env


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
def prefect_server(settings: Settings, log_path: Path):
    """A `prefect server start` on 127.0.0.1 (SQLite under PREFECT_HOME); yields its API URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    command = [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    with running(command, server_environment(settings), log_path, f"{url}/health"):
        yield url


@contextmanager
def mlflow_ui(settings: Settings, log_path: Path):
    """The MLflow UI over the tracking store under UNIROUTE_HOME; yields its URL."""
    port = free_port()
    settings.mlflow_artifacts.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{port}"
    command = [str(BIN / "mlflow"), "ui", "--backend-store-uri", settings.mlflow_uri,
               "--default-artifact-root", str(settings.mlflow_artifacts.resolve()),
               "--host", "127.0.0.1", "--port", str(port)]
    with running(command, server_environment(settings), log_path, url):
        yield url


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-mlflow-ui", action="store_true", help="do not start the MLflow UI")
    args = parser.parse_args(argv)
    settings = Settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    logs = settings.home / "logs"
    logs.mkdir(exist_ok=True)
    with prefect_server(settings, logs / "prefect-server.log") as api_url:
        os.environ["PREFECT_API_URL"] = api_url
        with mlflow_ui(settings, logs / "mlflow-ui.log") if not args.no_mlflow_ui else _nothing() as mlflow_url:
            from prefect import serve

            from deployments.deployments import all_deployments

            print(f"Prefect UI:  {api_url.removesuffix('/api')}")
            print(f"Prefect API: {api_url}")
            if mlflow_url:
                print(f"MLflow UI:   {mlflow_url}")
            print(f"State:       {settings.home.resolve()}  (inbox: {settings.inbox_dir.resolve()})")
            serve(*all_deployments(), print_starting_message=True)


@contextmanager
def _nothing():
    yield None


if __name__ == "__main__":
    main()
