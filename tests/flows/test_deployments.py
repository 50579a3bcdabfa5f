"""Every deployment builds, its entrypoint loads, and schedules and triggers are the ones promised."""

from datetime import timedelta

from prefect.flows import load_flow_from_entrypoint

from deployments.deployments import INBOX_EVERY, NIGHTLY_CRON, PUBLISH_EVERY, all_deployments
from flows.onboard import MODELS_LABEL, RESULTS_LANDED


def test_every_deployment_entrypoint_imports_and_is_scheduled_as_documented():
    deployments = {d.name: d for d in all_deployments()}
    assert set(deployments) == {"nightly", "every-15-minutes", "inbox-watcher", "on-results-landed"}
    for deployment in deployments.values():
        flow = load_flow_from_entrypoint(deployment.entrypoint)
        assert flow.name == deployment.flow_name
    nightly = deployments["nightly"].schedules[0].schedule
    assert nightly.cron == NIGHTLY_CRON == "0 2 * * *"
    assert deployments["every-15-minutes"].schedules[0].schedule.interval == PUBLISH_EVERY == timedelta(minutes=15)
    assert deployments["inbox-watcher"].schedules[0].schedule.interval == INBOX_EVERY == timedelta(minutes=1)
    trigger = deployments["on-results-landed"].triggers[0]
    assert trigger.expect == {RESULTS_LANDED}
    assert MODELS_LABEL in trigger.parameters["models"]
    assert not deployments["on-results-landed"].schedules
