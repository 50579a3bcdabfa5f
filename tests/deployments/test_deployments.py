"""prefect.yaml is valid for Prefect's own loader, lists every deployment, and `make serve` serves the same ones."""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from prefect.cli.deploy._config import _load_deploy_configs_and_actions
from prefect.cli.deploy._models import PrefectYamlModel
from prefect.cli.deploy._schedules import _construct_schedules
from prefect.cli.deploy._triggers import _initialize_deployment_triggers
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
from prefect.flows import load_flow_from_entrypoint
from rich.console import Console

from deployments.deployments import PREFECT_YAML, all_deployments, deployment_specs
from deployments.serve import BIN, prefect_server, server_environment
from flows.onboard import MODELS_LABEL, RESULTS_LANDED
from flows.publish import TRAFFIC_DRIFTED
from uniroute.settings import Settings

REPO = Path(__file__).resolve().parents[2]
EXPECTED = {
    "nightly": "uniroute-nightly-build",
    "every-15-minutes": "uniroute-publish",
    "inbox-watcher": "uniroute-ingest-inbox",
    "on-results-landed": "uniroute-onboard",
}


def test_prefect_yaml_passes_prefect_deploys_own_validation(monkeypatch):
    monkeypatch.chdir(REPO)  # entrypoints are relative to the repository root, as for `prefect deploy`
    PrefectYamlModel.model_validate(yaml.safe_load(PREFECT_YAML.read_text()))  # raises where the loader only warns
    console = Console(record=True)
    configs, actions = _load_deploy_configs_and_actions(PREFECT_YAML, console=console)
    assert "Skipping" not in console.export_text()
    assert actions["pull"] is None  # `prefect deploy` records the repository folder as the working directory
    assert {c["name"]: load_flow_from_entrypoint(c["entrypoint"]).name for c in configs} == EXPECTED
    built = {}
    for config in configs:
        assert config["work_pool"]["name"] == "uniroute"
        assert config["concurrency_limit"]["limit"] == 1
        schedules = _construct_schedules(config, {}, console=console, is_interactive=lambda: False)
        built[config["name"]] = [s["schedule"] for s in schedules]
        triggers = _initialize_deployment_triggers(config["name"], config.get("triggers") or [])
        if config["name"] == "on-results-landed":
            assert not schedules and len(triggers) == 1
            assert triggers[0].expect == {RESULTS_LANDED} and MODELS_LABEL in triggers[0].parameters["models"]
        elif config["name"] == "nightly":  # on its schedule, and early when the traffic drifted
            assert len(schedules) == 1 and [t.expect for t in triggers] == [{TRAFFIC_DRIFTED}]
        else:
            assert len(schedules) == 1 and not triggers
    assert (built["nightly"][0].cron, built["nightly"][0].timezone) == ("0 2 * * *", "UTC")
    assert built["every-15-minutes"][0].interval == timedelta(minutes=15)
    assert built["inbox-watcher"][0].interval == timedelta(minutes=1)


def test_served_deployments_are_the_ones_prefect_yaml_declares():
    served = {d.name: d for d in all_deployments()}
    assert {name: d.flow_name for name, d in served.items()} == EXPECTED
    for name, d in served.items():
        assert load_flow_from_entrypoint(d.entrypoint).name == EXPECTED[name]
        assert d.concurrency_limit == 1
    assert served["nightly"].schedules[0].schedule.cron == "0 2 * * *"
    assert served["every-15-minutes"].schedules[0].schedule.interval == timedelta(minutes=15)
    assert served["inbox-watcher"].schedules[0].schedule.interval == timedelta(minutes=1)
    assert served["nightly"].concurrency_options.collision_strategy == "CANCEL_NEW"
    assert served["on-results-landed"].concurrency_options.collision_strategy == "ENQUEUE"
    trigger = served["on-results-landed"].triggers[0]
    assert trigger.expect == {RESULTS_LANDED} and MODELS_LABEL in trigger.parameters["models"]
    assert not served["on-results-landed"].schedules
    assert [t.expect for t in served["nightly"].triggers] == [{TRAFFIC_DRIFTED}]
    assert [s["name"] for s in deployment_specs()] == list(served)


def _prefect(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "prefect"), *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_prefect_deploy_all_then_a_process_worker_runs_a_deployment(tmp_path):
    """What a Prefect user types: create the pool, `prefect deploy --all`, `prefect worker start`; on a real server."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    settings = Settings(home=tmp_path / "home")
    with prefect_server(settings, tmp_path / "prefect-server.log") as api_url:
        env = server_environment(settings) | {"PREFECT_API_URL": api_url, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
        assert _prefect("work-pool", "create", "uniroute", "--type", "process", env=env).returncode == 0
        deployed = _prefect("--no-prompt", "deploy", "--all", env=env)
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        assert deployed.stdout.count("successfully created") == 4

        async def read(names: list[str]):
            async with get_client() as client:
                found = {n: await client.read_deployment_by_name(n) for n in names}
                automations = await client.read_automations()
                return found, automations

        with temporary_settings({PREFECT_API_URL: api_url}):
            names = [f"{flow}/{name}" for name, flow in EXPECTED.items()]
            found, automations = asyncio.run(read(names))
            assert all(d.work_pool_name == "uniroute" and d.global_concurrency_limit.limit == 1 for d in found.values())
            assert found["uniroute-nightly-build/nightly"].concurrency_options.collision_strategy == "CANCEL_NEW"
            assert found["uniroute-nightly-build/nightly"].schedules[0].schedule.cron == "0 2 * * *"
            assert found["uniroute-ingest-inbox/inbox-watcher"].schedules[0].schedule.interval == timedelta(minutes=1)
            onboarding = found["uniroute-onboard/on-results-landed"]
            assert sorted(tuple(a.trigger.expect) for a in automations) == sorted([(RESULTS_LANDED,),
                                                                                   (TRAFFIC_DRIFTED,)])

            inbox = settings.inbox_dir
            inbox.mkdir(parents=True)
            (inbox / "val.csv").write_text("prompt_id,prompt,model,score,cost,split\np1,Q one,m_new,1,0.5,val\n")
            # A queue of its own, so the worker takes this run and none of the scheduled ones.
            run = run_deployment("uniroute-ingest-inbox/inbox-watcher", timeout=0, work_queue_name="adhoc")
            worker = _prefect("worker", "start", "--pool", "uniroute", "--work-queue", "adhoc", "--run-once",
                              env=env | {"UNIROUTE_HOME": str(settings.home)})
            assert worker.returncode == 0, worker.stdout + worker.stderr

            async def outcome():
                async with get_client() as client:
                    done = await client.read_flow_run(run.id)
                    triggered = await client.read_flow_runs(
                        deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[onboarding.id])))
                    return done, triggered

            done, triggered = asyncio.run(outcome())
            assert done.state.is_completed() and done.name == "inbox: 1 ingested; results landed for m_new"
            assert (inbox / "done" / "val.csv").exists()
            deadline = time.monotonic() + 60  # the event the run emitted triggers onboarding (prefect.yaml's trigger)
            while not triggered and time.monotonic() < deadline:
                time.sleep(1)
                triggered = asyncio.run(outcome())[1]
            assert [r.parameters for r in triggered] == [{"models": "m_new"}]
