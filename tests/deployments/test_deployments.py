"""prefect.yaml is valid for Prefect's own loader, lists every deployment, and `make serve` serves the same ones."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import yaml
from prefect.cli.deploy._config import _load_deploy_configs_and_actions
from prefect.cli.deploy._models import PrefectYamlModel
from prefect.cli.deploy._schedules import _construct_schedules
from prefect.cli.deploy._triggers import _initialize_deployment_triggers
from prefect.flows import load_flow_from_entrypoint
from rich.console import Console

from deployments.deployments import PREFECT_YAML, all_deployments, deployment_specs
from flows.onboard import MODELS_LABEL, RESULTS_LANDED

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
    assert [s["name"] for s in deployment_specs()] == list(served)
