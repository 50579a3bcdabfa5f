"""A Dask cluster as an operator starts one: a `dask scheduler` and `dask worker` processes, each in its own
process group (so a worker's nanny and its child go down together, and a test can kill one worker alone)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *args], env=env, cwd=REPO, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Signal a started process's group and wait for it (SIGKILL after 30 s)."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _scheduler_address(scheduler: subprocess.Popen, scheduler_file: Path, log: Path, timeout: float = 120) -> str:
    """The address a started scheduler writes to its scheduler file (waiting for it; its log if it exits first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if scheduler.poll() is not None:
            raise RuntimeError(f"the Dask scheduler exited ({scheduler.returncode}): {log.read_text()[-2000:]}")
        try:
            return str(json.loads(scheduler_file.read_text())["address"])
        except (FileNotFoundError, ValueError, KeyError):  # not written yet, or half written
            time.sleep(0.1)
    raise RuntimeError(f"no scheduler file in {timeout:.0f} s: {log.read_text()[-2000:]}")


@dataclass
class Cluster:
    address: str
    scheduler: subprocess.Popen
    workers: list[subprocess.Popen] = field(default_factory=list)


@contextmanager
def external_cluster(folder: Path, workers: int = 1, threads: int = 1,
                     env: dict[str, str] | None = None) -> Iterator[Cluster]:
    """A scheduler and `workers` worker processes (`threads` threads each) started outside the test's process."""
    from distributed import Client

    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    # Port 0 and the address read back from the scheduler file: a port picked free beforehand can be taken by any
    # connection's local end before the scheduler binds it, and the workers then join whoever holds it.
    scheduler_file = folder / "scheduler.json"
    scheduler = _start(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                        "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(scheduler_file)], env,
                       folder / "scheduler.log")
    cluster = Cluster("", scheduler)
    try:
        cluster.address = _scheduler_address(scheduler, scheduler_file, folder / "scheduler.log")
        for i in range(workers):
            cluster.workers.append(_start(["distributed.cli.dask_worker", cluster.address, "--nworkers", "1",
                                           "--nthreads", str(threads), "--no-dashboard"], env,
                                          folder / f"worker-{i}.log"))
        with Client(cluster.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=60)
        yield cluster
    finally:
        for process in [*reversed(cluster.workers), scheduler]:
            stop(process)
