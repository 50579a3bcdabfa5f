"""A worker killed mid-build: `uniroute build` against an external scheduler completes on the other worker (Dask
runs the lost worker's embedding task again; its partition file is named by content, so nothing is doubled) and
the store holds together (`uniroute doctor --check`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from distributed import Client

from tests.dask_cluster import REPO, external_cluster
from tests.helpers import ingest
from uniroute.store.embeddings import partition_files

pytestmark = pytest.mark.slow
N_PROMPTS = 40


def _busy_worker_pid(client: Client, prefix: str, timeout: float = 240.0) -> int:
    """The pid of the worker process running a task whose key starts with prefix (waits until one does)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = client.run_on_scheduler(lambda dask_scheduler, p=prefix: [
            ts.processing_on.pid for ts in dask_scheduler.tasks.values()
            if ts.processing_on is not None and str(ts.key).startswith(p)])
        if pids:
            return pids[0]
        time.sleep(0.2)
    raise AssertionError(f"no {prefix} task started within {timeout} s")


def test_a_worker_killed_while_embedding(tmp_path, shared_datasets):
    home = tmp_path / "home"
    home.mkdir()
    logs = pd.read_parquet(shared_datasets / "routerbench_subset" / "long.parquet")
    logs = logs[logs["prompt_id"].isin(set(np.sort(logs["prompt_id"].unique())[:N_PROMPTS]))]
    logs.to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(home / "uniroute.duckdb", tmp_path / "logs.parquet", progress=False)
    # MiniLM: slow enough on this CPU (torch imported and the weights loaded in the worker, then 40 long prompts at
    # about 2 a second) to be killed mid-task; more prompts only made the survivor's rerun longer (120: 53 s).
    env = {**os.environ, "PYTHONPATH": str(REPO), "UNIROUTE_HOME": str(home), "UNIROUTE_EMBEDDER": "minilm",
           "UNIROUTE_MLFLOW": "false", "UNIROUTE_BUILD_KINDS": "kmeans"}
    with external_cluster(tmp_path, workers=2, threads=1) as cluster, Client(cluster.address) as client:
        build = subprocess.Popen([sys.executable, "-m", "uniroute", "build"], cwd=tmp_path, text=True,
                                 env={**env, "UNIROUTE_DASK_ADDRESS": cluster.address},
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            victim = _busy_worker_pid(client, "embed-partition")
            time.sleep(1.0)  # inside the task: the worker is encoding
            os.killpg(os.getpgid(victim), signal.SIGKILL)  # its nanny too: no restart, one worker left
            out, err = build.communicate(timeout=900)
        finally:
            if build.poll() is None:
                build.kill()
        survivors = len(client.scheduler_info()["workers"])
    assert build.returncode == 0, err[-2000:]
    assert f"embedded on the Dask scheduler at {cluster.address}" in out
    assert survivors == 1
    # The embedding partitions only: the build's cluster assignments are files under the same root (assignments/).
    written = [pq.read_metadata(f).num_rows for f in partition_files(str(home / "embeddings"))]
    assert sum(written) == logs["prompt"].nunique()  # every text once: the rerun task rewrote its own file
    doctor = subprocess.run([sys.executable, "-m", "uniroute", "doctor", "--check"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
