"""End to end under a real Prefect API: nightly build (Dask), event-triggered onboarding, publishing, lineage.

Real RouterBench results (a deterministic 400-prompt slice), real `static` embeddings (the session's built
table: the torch MiniLM took two thirds of this module's time and proves nothing more here; it is served in
tests/pipeline/tracking/test_tracking_serve.py and embeds on Dask in tests/flows/test_worker_loss.py), a real
DuckDB file, a real MLflow SQLite store and a 2-worker Dask LocalCluster. The strongest LLM is held back and
arrives later with its validation results, as a new model would.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from uniroute import store
from uniroute.pipeline.pool import registry
from uniroute.settings import Settings

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
N_PROMPTS = 400


def _env(**values: str) -> dict[str, str | None]:
    """Set environment variables; return the previous values for restoring."""
    previous = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    return previous


def _restore(previous: dict[str, str | None]) -> None:
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _slice(shared_datasets: Path) -> pd.DataFrame:
    logs = pd.read_parquet(shared_datasets / "routerbench_subset" / "long.parquet")
    keep = np.sort(logs["prompt_id"].unique())[:N_PROMPTS]
    return logs[logs["prompt_id"].isin(set(keep))].reset_index(drop=True)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, prefect_harness, shared_datasets, built_embedders_cache):
    """A home where the nightly build flow has run on the logs without the held-back model."""
    home = tmp_path_factory.mktemp("pipeline") / "home"
    home.mkdir()
    (home / "cache").symlink_to(built_embedders_cache, target_is_directory=True)  # the static table, built once
    from deployments.serve import free_port

    # The build's artifacts link to the MLflow UI on this port (never the default 5000: it may be in use).
    # The one-hot kinds only: the views checked below read per-cluster routing tables (every kind's survival of
    # publish / route / onboard / retire / pyfunc: tests/pipeline/build/test_router_kinds.py).
    previous = _env(UNIROUTE_HOME=str(home), UNIROUTE_EMBEDDER="static", UNIROUTE_DASK_WORKERS="2",
                    UNIROUTE_MLFLOW_PORT=str(free_port()), UNIROUTE_BUILD_KINDS="kmeans,kmeans_shrunk")
    try:
        settings = Settings()
        logs = _slice(shared_datasets)
        newcomer = str(logs.groupby("model")["score"].mean().idxmax())
        settings.inbox_dir.mkdir(parents=True)
        logs[logs.model != newcomer].to_parquet(settings.inbox_dir / "logs.parquet", index=False)
        from flows.build import nightly_build

        state = nightly_build(return_state=True)
        yield SimpleNamespace(settings=settings, logs=logs, newcomer=newcomer, build=state.result(),
                              build_run=state.state_details.flow_run_id, api_url=prefect_harness)
    finally:
        _restore(previous)


def _champion(db_path: Path) -> registry.RouterVersion:
    with store.opened(db_path, read_only=True) as con:
        return registry.load_champion(con)


def _version(db_path: Path, router_id: str) -> registry.RouterVersion:
    with store.opened(db_path, read_only=True) as con:
        return registry.load_router_version(con, router_id)


def test_build_versions_a_router_and_logs_its_lineage(pipeline):
    import mlflow

    settings, build = pipeline.settings, pipeline.build
    assert (settings.inbox_dir / "done" / "logs.parquet").exists()
    assert build["prompts_embedded_on_dask"] == N_PROMPTS  # the embedding ran on the Dask task runner
    # The build's own version, not the champion: the onboarding test (any order) makes a child the champion.
    built = _version(settings.db_path, build["router_id"])
    assert build["promoted"] and built.parent_id is None
    assert pipeline.newcomer not in built.router.models and len(built.router.models) == 10
    assert set(build["metrics"]) == {"kmeans", "kmeans_shrunk", "zero"}
    assert build["kind"] in ("kmeans", "kmeans_shrunk") and [c["chosen"] for c in build["candidates"]].count(True) == 1
    client = mlflow.MlflowClient(tracking_uri=settings.mlflow_uri)
    versions = [v for v in client.search_model_versions("name = 'uniroute-router'")
                if v.tags.get("router_id") == build["router_id"]]
    assert len(versions) == 1
    run = client.get_run(versions[0].run_id)
    assert run.data.params["k"] == str(build["k"]) and "data_fingerprint" in run.data.params
    assert {"kmeans_area", "zero_area", "val_area", "candidate_kmeans_val_area"} <= set(run.data.metrics)
    assert run.data.params["candidate_kinds"] == "kmeans,kmeans_shrunk"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"centroids.npy", "psi.csv", "routing_table.csv", "deferral_curves.png", "candidates.csv"} <= artifacts


def test_served_pyfunc_routes_like_uniroute_route(pipeline):
    from uniroute.pipeline.serving.route import route_texts, routing_source
    from uniroute.pipeline.tracking import load_router_model

    settings = pipeline.settings
    prompts = pipeline.logs.drop_duplicates("prompt_id")["prompt"].head(12).tolist()
    model = load_router_model("models:/uniroute-router@champion", tracking_uri=settings.mlflow_uri)
    source = routing_source(settings.db_path, settings.published_dir)
    for params in ({"lambda": 0.0}, {"lambda": 50.0}, {"budget": 0.3}):
        served = model.predict(pd.DataFrame({"prompt": prompts}), params=params)
        ours = route_texts(source, prompts, lam=params.get("lambda"), budget=params.get("budget"))
        assert served["model"].tolist() == ours["model"].tolist(), params


def test_dask_build_equals_single_process_build(pipeline, tmp_path, built_embedders_cache):
    """The same data built in-process (no Dask) gives the same embeddings, K, centroids and Psi."""
    from tests.helpers import build, ingest

    other = Settings(home=tmp_path / "single")
    other.home.mkdir()
    (other.home / "cache").symlink_to(built_embedders_cache, target_is_directory=True)
    ingest(other.db_path, pipeline.settings.inbox_dir / "done" / "logs.parquet", progress=False)
    single = build(other.db_path, "static", pipeline.settings.seed, kinds=("kmeans", "kmeans_shrunk"),
                   cache_dir=other.cache_dir)
    a = _version(pipeline.settings.db_path, pipeline.build["router_id"]).router
    b = _version(other.db_path, single.router_id).router
    assert single.k == pipeline.build["k"] and a.models == b.models
    np.testing.assert_array_equal(a.assigner.centers, b.assigner.centers)
    np.testing.assert_array_equal(a.psi, b.psi)


def _flow_run_and_artifacts(flow_run_id) -> tuple[str, dict]:
    """A flow run's name and its artifacts by key."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    async def read():
        async with get_client() as client:
            run = await client.read_flow_run(flow_run_id)
            found = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
            return run.name, {a.key: a for a in found}

    return asyncio.run(read())


def test_build_run_is_named_for_its_router_and_leaves_artifacts(pipeline, tmp_path):
    import urllib.request

    from deployments.serve import mlflow_ui

    build = pipeline.build
    name, artifacts = _flow_run_and_artifacts(pipeline.build_run)
    k_name = "k" if build["kind"] == "knn" else "K"
    assert name == (f"built {build['router_id']} {build['kind']} {k_name}={build['k']} {len(build['models'])} "
                    "models (champion)")
    assert set(artifacts) == {"uniroute-build", "uniroute-build-candidates", "uniroute-build-evaluation",
                              "uniroute-deferral-curves", "uniroute-mlflow-run"}
    kinds = json.loads(artifacts["uniroute-build-candidates"].data)
    assert sorted(r["kind"] for r in kinds) == ["kmeans", "kmeans_shrunk"]
    assert [r["kind"] for r in kinds if r["chosen"]] == [build["kind"]]
    summary = artifacts["uniroute-build"].data
    assert summary.startswith(f"# Nightly build: {build['router_id']}") and "| this build (candidate) |" in summary
    assert {row["method"] for row in json.loads(artifacts["uniroute-build-evaluation"].data)} == set(build["metrics"])
    image_url = artifacts["uniroute-deferral-curves"].data
    settings = pipeline.settings
    assert image_url.startswith(f"{settings.mlflow_ui_url}/get-artifact?path=deferral_curves.png")
    # The MLflow UI `make serve` runs, on the port the artifact links to, serves the build's deferral-curve plot.
    with (mlflow_ui(settings, tmp_path / "mlflow-ui.log", port=settings.mlflow_port),
          urllib.request.urlopen(image_url, timeout=30) as response):
        assert response.read(8) == b"\x89PNG\r\n\x1a\n"


def _run_log(flow_run_id) -> list:
    """The log records the API holds for a flow run (they arrive in batches: read until they stop growing)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    async def read():
        async with get_client() as client:
            return await client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))

    seen: list = []
    for _ in range(20):
        logs = asyncio.run(read())
        if logs and len(logs) == len(seen):
            return logs
        seen = logs
        time.sleep(0.5)
    return seen


def test_build_run_log_shows_what_each_library_stage_did(pipeline):
    """The library's INFO lines (stage timings, each kind's tuning) reach the run's log in the Prefect UI."""
    lines = {(log.name, log.message.split(" in ")[0]) for log in _run_log(pipeline.build_run)}
    assert ("uniroute.pipeline.build.nightly", f"loaded {N_PROMPTS} prompts x 10 models and their embeddings") in lines
    tuned = {message.split()[1] for name, message in lines
             if name == "uniroute.pipeline.build.tuned_kinds" and message.startswith("tuned ")}
    assert tuned == {"kmeans", "kmeans_shrunk"}


def _wait_for_onboarding_run(since: float, timeout: float):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    async def runs():
        async with get_client() as client:
            return await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["uniroute-onboard"])))

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for run in asyncio.run(runs()):
            if run.created.timestamp() >= since - 5 and run.state is not None and run.state.is_final():
                return run
        time.sleep(1)
    raise AssertionError(f"no onboarding flow run finished within {timeout} s")


def test_results_landed_event_triggers_onboarding_then_publish(pipeline):
    from deployments.deployments import ONBOARDING, wait_until_served
    from flows.ingest import ingest_inbox
    from flows.publish import publish_routing_tables
    from uniroute.pipeline.serving.snapshot import read_current
    from uniroute.store import read_only_query

    settings, newcomer = pipeline.settings, pipeline.newcomer
    first = publish_routing_tables()
    assert first["published"] and newcomer not in first["pool"]
    env = {**os.environ, "PREFECT_API_URL": pipeline.api_url, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}
    runner = subprocess.Popen([sys.executable, "-m", "deployments.runner", "--only", ONBOARDING], cwd=REPO, env=env)
    try:
        wait_until_served(ONBOARDING, triggered=True)  # the deployment and its trigger's automation exist
        val = read_only_query(settings.db_path, "select prompt_id from prompt_splits where split = 'val'")
        landed = pipeline.logs[(pipeline.logs.model == newcomer) & pipeline.logs.prompt_id.isin(set(val.prompt_id))]
        landed.to_parquet(settings.inbox_dir / "newcomer.parquet", index=False)
        since = time.time()
        outcome = ingest_inbox()
        assert any(newcomer in o["landed_models"] for o in outcome)
        onboarding = _wait_for_onboarding_run(since, timeout=240)
        assert onboarding.state.name == "Completed"
    finally:
        runner.terminate()
        runner.wait(timeout=30)
    champion = _champion(settings.db_path)
    assert champion.parent_id == pipeline.build["router_id"] and newcomer in champion.router.models
    parent = _version(settings.db_path, pipeline.build["router_id"])
    np.testing.assert_array_equal(champion.router.assigner.centers, parent.router.assigner.centers)
    name, artifacts = _flow_run_and_artifacts(onboarding.id)
    # The event-triggered run is the one that onboards: the flows' reconciliation leaves the newcomer to it.
    assert name == f"onboarded {newcomer} -> {champion.router_id}"
    assert f"| {newcomer} |" in artifacts["uniroute-onboarding"].data
    state = publish_routing_tables(return_state=True)
    second = state.result()
    assert second["published"] and newcomer in second["pool"]
    name, artifacts = _flow_run_and_artifacts(state.state_details.flow_run_id)
    assert name == f"published {second['version']}"
    assert f"## Changes since {first['version']} (budget grid)" in artifacts["uniroute-publication"].data
    assert publish_routing_tables()["published"] is False  # nothing changed, nothing published
    current = read_current(settings.published_dir)
    assert current.manifest["router_id"] == champion.router_id
    routes = read_only_query(settings.db_path, "select model from current_routing_table where grid = 'lambda'")
    assert newcomer in set(routes.model)  # the strongest LLM takes traffic at small lambda
    # On real data, after both publications (one test: it needs the sequence above, and tests run in any order):
    # the views' traffic shares reproduce each published expected score, and the newcomer shows.
    db = settings.db_path
    check = read_only_query(db, """
        select r.version, r.grid, r.budget, r.lam, any_value(b.expected_score) as published,
               sum(r.share * (1 - psi.routing_loss)) as recomputed
        from publication_routes as r
        join psi on psi.router_id = r.router_id and psi.model = r.model and psi.cluster = r.cluster
        join published_budgets as b on b.version = r.version and b.grid = r.grid and b.lam = r.lam
             and b.budget is not distinct from r.budget
        group by all""")
    assert len(check) == 2 * 20  # two publications x (10 budgets + 10 lambdas)
    np.testing.assert_allclose(check.recomputed, check.published, rtol=1e-9)
    totals = read_only_query(db, "select version, grid, budget, lam, sum(traffic_share) as total "
                                 "from traffic_share group by all")
    np.testing.assert_allclose(totals.total, 1.0)
    joined = read_only_query(db, "select * from onboarded_traffic where normalised_lambda = 0 and grid = 'lambda'")
    assert joined.model.tolist() == [newcomer] and joined.traffic_share.iloc[0] > 0
    diff = read_only_query(db, "select * from publication_diff where consecutive and grid = 'budget'")
    assert set(diff[diff.model == newcomer].pool_change) == {"added"}
