"""The nightly build pointed at a Dask scheduler someone else started (UNIROUTE_DASK_ADDRESS) works unchanged.

A real `dask scheduler` and `dask worker` run as separate processes, as an operator would start them; the build
flow connects to that address instead of starting its own cluster, its embedding task runs on that worker, and
the router it versions equals the one an in-process build makes from the same data.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pandas as pd
import pytest

from tests.dask_cluster import external_cluster
from tests.flows.test_pipeline import _env, _restore, _version
from uniroute.settings import Settings

pytestmark = pytest.mark.slow
N_PROMPTS = 300


@pytest.fixture
def external_scheduler(tmp_path, prefect_harness):
    """A scheduler and one worker with ONE thread started outside the flow; yields the scheduler's address.

    One thread in the whole cluster is where a task that waits for tasks it submitted deadlocks.
    The worker imports the flow's task by reference (flows.build), and reports task states to the same API."""
    with external_cluster(tmp_path, workers=1, threads=1, env={"PREFECT_API_URL": prefect_harness}) as cluster:
        yield cluster.address


def _all_logs() -> list:
    """Every log record the test's Prefect API holds (the embedding subflow's run included)."""
    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return await client.read_logs()

    seen: list = []
    for _ in range(20):  # records arrive in batches: read until they stop growing
        logs = asyncio.run(read())
        if logs and len(logs) == len(seen):
            return logs
        seen = logs
        time.sleep(0.5)
    return seen


def test_build_on_an_existing_scheduler_equals_the_in_process_build(external_scheduler, tmp_path, shared_datasets,
                                                                    built_embedders_cache):
    from distributed import Client

    from flows.build import nightly_build
    from tests.helpers import build, ingest

    home = tmp_path / "home"
    home.mkdir()
    (home / "cache").symlink_to(built_embedders_cache, target_is_directory=True)  # the static model, built once
    logs = pd.read_parquet(shared_datasets / "routerbench_subset" / "long.parquet")
    logs = logs[logs["prompt_id"].isin(set(np.sort(logs["prompt_id"].unique())[:N_PROMPTS]))]
    previous = _env(UNIROUTE_HOME=str(home), UNIROUTE_EMBEDDER="static", UNIROUTE_MLFLOW="false",
                    UNIROUTE_DASK_ADDRESS=external_scheduler, UNIROUTE_BUILD_KINDS="kmeans")
    try:
        settings = Settings()
        settings.inbox_dir.mkdir(parents=True)
        logs.to_parquet(settings.inbox_dir / "logs.parquet", index=False)
        result = nightly_build()
    finally:
        _restore(previous)

    assert result["prompts_embedded_on_dask"] == N_PROMPTS
    # The embedding ran on the external cluster: its scheduler has seen the flow's task.
    with Client(external_scheduler, timeout=30) as client:
        prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert any("embed" in prefix for prefix in prefixes), prefixes
    # The Dask phase's progress reached the run's log from the worker that ran the embedding task.
    embed_lines = [log.message for log in _all_logs() if log.name == "uniroute.embed.fill"]
    assert any("distinct to embed" in line for line in embed_lines), embed_lines
    assert any("partition files" in line for line in embed_lines), embed_lines

    other = Settings(home=tmp_path / "single")
    ingest(other.db_path, settings.inbox_dir / "done" / "logs.parquet", progress=False)
    (other.home / "cache").symlink_to(built_embedders_cache, target_is_directory=True)
    single = build(other.db_path, "static", settings.seed, kinds=("kmeans",), cache_dir=other.cache_dir)
    a = _version(settings.db_path, result["router_id"]).router
    b = _version(other.db_path, single.router_id).router
    assert single.k == result["k"] and a.models == b.models
    np.testing.assert_allclose(a.assigner.centers, b.assigner.centers, rtol=1e-6)
    np.testing.assert_allclose(a.psi, b.psi, rtol=1e-9)


def test_uniroute_build_with_the_address_embeds_on_that_scheduler(external_scheduler, tmp_path, shared_datasets,
                                                                 built_embedders_cache, monkeypatch):
    """`uniroute build` reads UNIROUTE_DASK_ADDRESS as the flow does: the embedding tasks reach the scheduler."""
    from distributed import Client
    from typer.testing import CliRunner

    from tests.helpers import ingest
    from uniroute.cli import app

    home = tmp_path / "cli-home"
    home.mkdir()
    (home / "cache").symlink_to(built_embedders_cache, target_is_directory=True)
    logs = pd.read_parquet(shared_datasets / "routerbench_subset" / "long.parquet")
    logs = logs[logs["prompt_id"].isin(set(np.sort(logs["prompt_id"].unique())[:N_PROMPTS]))]
    logs.to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(home / "uniroute.duckdb", tmp_path / "logs.parquet", progress=False)
    for name, value in {"UNIROUTE_HOME": str(home), "UNIROUTE_EMBEDDER": "static", "UNIROUTE_MLFLOW": "false",
                        "UNIROUTE_DASK_ADDRESS": external_scheduler, "UNIROUTE_BUILD_KINDS": "kmeans"}.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["build"])
    assert result.exit_code == 0, result.output
    assert f"embedded on the Dask scheduler at {external_scheduler}" in result.output
    with Client(external_scheduler, timeout=30) as client:
        prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert any("embed-partition" in prefix for prefix in prefixes), prefixes
