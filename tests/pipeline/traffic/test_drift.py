"""Drift-triggered retraining: traffic from another domain than the champion's training prompts (RouterBench's
questions against the synthetic logs) is drifted, the training prompts' own traffic is not; on a real Prefect API
the publish flow then emits `uniroute.traffic.drifted` and prefect.yaml's trigger starts a nightly build run."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.helpers import build, ingest
from uniroute import operations
from uniroute.cli import app
from uniroute.operations.context import Context
from uniroute.pipeline.serving.route import RoutingRequest
from uniroute.pipeline.traffic.drift import DriftThresholds, total_variation
from uniroute.settings import Settings
from uniroute.synth import write_synthetic_logs

runner = CliRunner()
THRESHOLDS = DriftThresholds(min_decisions=100)
NIGHTLY = "uniroute-nightly-build/nightly"


@pytest.fixture(scope="module")
def drift_template(tmp_path_factory) -> tuple[Path, list[str]]:
    """A K-means champion over TF-IDF on synthetic logs of six topics (400 prompts), and its prompts."""
    root = tmp_path_factory.mktemp("drift")
    summary = write_synthetic_logs(root / "logs", n_prompts=400, n_models=4, n_topics=6, seed=5, with_split=True)
    settings = Settings(home=root / "home", mlflow=False)
    settings.home.mkdir()
    ingest(settings.db_path, summary.logs_path, progress=False)
    build(settings.db_path, "tfidf", kinds=("kmeans",))
    return settings.home, pd.read_parquet(summary.logs_path).drop_duplicates("prompt_id").prompt.tolist()


@pytest.fixture
def drift_home(drift_template, tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(drift_template[0], home, symlinks=True)
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    return home


@pytest.fixture
def training_prompts(drift_template) -> list[str]:
    return drift_template[1]


def _other_domain(shared_datasets: Path, n: int = 400) -> list[str]:
    prompts = pd.read_parquet(shared_datasets / "routerbench_subset" / "long.parquet", columns=["prompt"]).prompt
    return prompts.drop_duplicates().sample(n, random_state=0).tolist()


def _serve(home: Path, texts: list[str]) -> None:
    """Route texts as users would (recorded to the spool), then land the records in the store."""
    operations.route(Context.of(Settings(home=home, mlflow=False)), texts, RoutingRequest(lam=0.0))
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0


def _check(home: Path) -> operations.drift:
    return operations.drift(Context.of(Settings(home=home, mlflow=False)), THRESHOLDS)


def test_total_variation_is_half_the_l1_distance():
    assert total_variation([0.5, 0.5], [0.5, 0.5]) == 0.0
    assert total_variation([1.0, 0.0], [0.0, 1.0]) == 1.0
    assert total_variation([0.7, 0.3], [0.5, 0.5]) == pytest.approx(0.2)


def test_traffic_like_training_is_not_drifted(drift_home, training_prompts):
    assert _check(drift_home).reason.startswith("no drift check: 0 decisions since ")
    _serve(drift_home, training_prompts)
    same = _check(drift_home)
    assert not same.drifted and same.decisions == len(training_prompts), same.reason
    assert same.mix_distance < THRESHOLDS.mix and same.far_share < THRESHOLDS.far
    assert same.reason.startswith(f"no drift: {len(training_prompts)} decisions since ")


def test_traffic_from_another_domain_is_drifted(drift_home, shared_datasets):
    _serve(drift_home, _other_domain(shared_datasets))
    other = _check(drift_home)
    assert other.drifted and other.decisions == 400, other.reason
    assert other.mix_distance > THRESHOLDS.mix and other.reason.startswith("drifted: ")
    assert sum(other.traffic_shares) == pytest.approx(1) and sum(other.training_shares) == pytest.approx(1)


def test_drift_is_announced_once_per_champion_and_training_data(drift_home, shared_datasets):
    ctx = Context.of(Settings(home=drift_home, mlflow=False))
    other = _other_domain(shared_datasets)
    _serve(drift_home, other[:200])
    first = _check(drift_home)
    assert first.drifted and first.announce and first.announced_at is None, first.reason
    assert operations.drift_announced(ctx, first) is True
    # A second drifted batch for the same champion on the same training data: drifted, not announced again.
    _serve(drift_home, other[200:])
    second = _check(drift_home)
    assert second.drifted and not second.announce and second.announced_at is not None, second.reason
    assert "announced at" in second.reason and second.as_dict()["announce"] is False
    assert operations.drift_announced(ctx, first) is False  # a late record of the same announcement adds nothing
    status = runner.invoke(app, ["status"], catch_exceptions=False)
    assert f"drift      announced for {first.router_id} at " in status.stdout, status.output
    listed = runner.invoke(app, ["sql", "select router_id, decisions from drift_announcements"],
                           catch_exceptions=False)
    assert listed.exit_code == 0 and first.router_id in listed.stdout, listed.output
    # New training data ingested (not traffic): the same champion can be announced again, once.
    more = write_synthetic_logs(drift_home.parent / "more", n_prompts=30, n_models=4, n_topics=6, seed=8,
                                with_split=True)
    ingest(Settings(home=drift_home, mlflow=False).db_path, more.logs_path, progress=False)
    renewed = _check(drift_home)
    assert renewed.router_id == first.router_id and renewed.announce, renewed.reason
    assert renewed.data_fingerprint != first.data_fingerprint
    # A new build is a new champion: its traffic can be announced again.
    rebuilt = build(Settings(home=drift_home, mlflow=False).db_path, "tfidf", kinds=("kmeans",))
    assert rebuilt.promoted and rebuilt.router_id != first.router_id, rebuilt.reason
    _serve(drift_home, other[:200])
    third = _check(drift_home)
    assert third.router_id == rebuilt.router_id and third.announce, third.reason


def _triggered_runs(since: float) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName

    async def read():
        async with get_client() as client:
            runs = await client.read_flow_runs(
                deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=["nightly"])))
            return [r for r in runs if r.created.timestamp() >= since - 1]

    return asyncio.run(read())


@pytest.fixture
def nightly_on_drift(prefect_harness):
    """prefect.yaml's nightly deployment with its trigger, on the harness's API (without its cron: only what the
    event starts counts here)."""
    from deployments.deployments import deployment_specs, runner_deployment, wait_until_served

    spec = next(s for s in deployment_specs() if s["name"] == "nightly")
    runner_deployment({**spec, "schedules": []}).apply()
    wait_until_served(NIGHTLY, triggered=True)


def test_drifted_traffic_starts_a_nightly_build_run_and_training_like_traffic_does_not(
        nightly_on_drift, drift_home, training_prompts, shared_datasets, monkeypatch):
    from flows.publish import publish_routing_tables

    monkeypatch.setenv("UNIROUTE_DRIFT_MIN_DECISIONS", str(THRESHOLDS.min_decisions))
    _serve(drift_home, training_prompts)
    since = time.time()
    calm = publish_routing_tables()
    assert calm["published"] and calm["drift"]["drifted"] is False, calm["drift"]["reason"]
    # No wait of its own: a run the calm publish started would be counted below, seconds after the trigger service
    # (an event reaches a run in about 1.5 s) had it, beside the drifted publish's run.

    # The other domain's traffic now outweighs the training-like traffic three to one.
    _serve(drift_home, _other_domain(shared_datasets) * 3)
    drifted = publish_routing_tables()
    assert drifted["drift"]["drifted"] is True, drifted["drift"]["reason"]
    deadline = time.monotonic() + 60
    while not (runs := _triggered_runs(since)) and time.monotonic() < deadline:
        time.sleep(1)
    assert len(runs) == 1, runs

    # More drifted traffic for the same champion on the same data: said, not emitted again (no second build run).
    _serve(drift_home, _other_domain(shared_datasets))
    again = publish_routing_tables()
    assert again["drift"]["drifted"] is True and again["drift"]["announce"] is False, again["drift"]["reason"]
    time.sleep(5)  # long enough for the trigger service
    # One run in all: none from the calm publish, none from the repeated drift.
    assert len(runs := _triggered_runs(since)) == 1, runs
