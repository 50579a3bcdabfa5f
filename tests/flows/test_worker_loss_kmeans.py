"""A worker killed during the build's K-means on Dask: the build completes on the other worker (the scheduler reads
the lost worker's blocks again on the survivor), serves the K-means the data gives in-process, and the store holds
together (`uniroute doctor --check`).

The kill is exact, not timed: a scheduler plugin kills the worker (its nanny too, so it does not come back) at the
moment the first block of the training array is in its memory, before any Lloyd step has used it. Polling the
scheduler from the test could miss a K-means that takes a second on this small store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from distributed import Client
from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.utils import key_split

from tests.dask_cluster import external_cluster
from tests.helpers import ingest
from tests.synthetic_logs import synthetic_long
from uniroute import store
from uniroute.pipeline.build import nightly as build_module
from uniroute.pipeline.build.clusters import fit_dataset
from uniroute.pipeline.pool import registry

pytestmark = pytest.mark.slow
PLUGIN = "kill-at-first-kmeans-block"


class KillAtFirstBlock(SchedulerPlugin):
    """Kills the worker holding the first K-means block (clusters_dask._rows) as it lands in its memory."""

    name = PLUGIN

    def __init__(self) -> None:
        self.killed: int | None = None
        self.scheduler: Any = None

    async def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if self.killed is not None or finish != "memory" or key_split(key) != "rows":
            return
        holders = self.scheduler.tasks[key].who_has
        if holders:
            pid = next(iter(holders)).pid
            os.killpg(os.getpgid(pid), signal.SIGKILL)  # the worker's process group: its nanny goes too
            self.killed = pid


def test_a_worker_killed_during_kmeans(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    db = home / "uniroute.duckdb"
    synthetic_long(n_prompts=600, n_models=4).to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(db, tmp_path / "logs.parquet", progress=False)
    monkeypatch.setattr(build_module, "TUNING_SAMPLE", 100)  # fewer than the ~360 training prompts: a Dask refit
    with external_cluster(tmp_path, workers=2, threads=1) as cluster, \
            Client(cluster.address, set_as_default=False) as client:
        client.register_plugin(KillAtFirstBlock())
        with store.opened(db) as con:
            result = build_module.run_build(con, "tfidf", seed=0, kinds=("kmeans",), client=client)
        killed = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins[PLUGIN].killed)
        survivors = len(client.scheduler_info()["workers"])
    assert killed is not None  # the kill happened inside the K-means fit
    assert survivors == 1
    with store.opened(db, read_only=True) as con:
        router = registry.load_router_version(con, result.router_id).router
        dim = router.assigner.centers.shape[1]
        here, n_train = fit_dataset(con, router.embedder_id, dim, result.k, seed=0)  # in-process, no worker lost
    assert n_train == result.n_prompts["train"] > build_module.TUNING_SAMPLE
    np.testing.assert_allclose(router.assigner.centers, here.centers, atol=1e-5)  # the same K-means as without loss
    env = {**os.environ, "UNIROUTE_HOME": str(home), "UNIROUTE_MLFLOW": "false"}
    doctor = subprocess.run([sys.executable, "-m", "uniroute", "doctor", "--check"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
