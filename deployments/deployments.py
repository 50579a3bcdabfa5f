"""The Prefect deployments: nightly build, publishing every 15 minutes, inbox watcher, event-triggered onboarding."""

from __future__ import annotations

from datetime import timedelta

from prefect.events import DeploymentEventTrigger

from flows.build import nightly_build
from flows.ingest import ingest_inbox
from flows.onboard import MODELS_LABEL, RESULTS_LANDED, onboard_models
from flows.publish import publish_routing_tables

NIGHTLY_CRON = "0 2 * * *"
PUBLISH_EVERY = timedelta(minutes=15)
INBOX_EVERY = timedelta(minutes=1)


def onboarding_trigger() -> DeploymentEventTrigger:
    """Run onboarding for the models an ingested file brought validation results for."""
    return DeploymentEventTrigger(
        expect={RESULTS_LANDED},
        match={"prefect.resource.id": "uniroute.results.*"},
        parameters={"models": "{{ event.resource.get('" + MODELS_LABEL + "') }}"},
    )


ONBOARDING = "uniroute-onboard/on-results-landed"


def onboarding_deployment():
    """Onboarding, triggered by `uniroute.results.landed`."""
    return onboard_models.to_deployment(name="on-results-landed", triggers=[onboarding_trigger()],
                                        description="Make models routable when their validation results land")


def all_deployments() -> list:
    """Every deployment, ready for `prefect.serve(*all_deployments())`."""
    return [
        nightly_build.to_deployment(name="nightly", cron=NIGHTLY_CRON, description="Nightly retraining"),
        publish_routing_tables.to_deployment(
            name="every-15-minutes", interval=PUBLISH_EVERY, description="Publish routing tables when something changed"
        ),
        ingest_inbox.to_deployment(
            name="inbox-watcher", interval=INBOX_EVERY, description="Ingest new files in $UNIROUTE_HOME/inbox"
        ),
        onboard_models.to_deployment(
            name="on-results-landed",
            triggers=[onboarding_trigger()],
            description="Make models routable when their validation results land",
        ),
    ]


def wait_until_served(deployment: str, timeout: float = 180.0, triggered: bool = False) -> None:
    """Block until `flow-name/deployment-name` exists in the Prefect API (a runner has registered it) and, with
    triggered, until the automation of its event trigger exists too: an event emitted before that would be lost.

    The server's trigger service loads an automation as its creation commits (SQLite) and re-reads all of them
    every few seconds, so an automation the API returns is one the next event is matched against.
    """
    import asyncio
    import time

    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    async def ready() -> bool:
        async with get_client() as client:
            try:
                found = await client.read_deployment_by_name(deployment)
            except ObjectNotFound:
                return False
            if not triggered:
                return True
            return bool(await client.read_resource_related_automations(f"prefect.deployment.{found.id}"))

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if asyncio.run(ready()):
            return
        time.sleep(0.5)
    what = "its trigger's automation" if triggered else "it"
    raise TimeoutError(f"deployment {deployment}: {what} did not appear in the Prefect API within {timeout:.0f} s")
