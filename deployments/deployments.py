"""The Prefect deployments, as prefect.yaml declares them: served by `make serve`, deployed by `prefect deploy`.

prefect.yaml is the one place schedules, triggers and concurrency limits are written down; this module turns
its entries into deployments that `prefect.serve` runs without a work pool.
"""

from __future__ import annotations

import importlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from prefect.client.schemas.objects import ConcurrencyLimitConfig
from prefect.deployments.runner import RunnerDeployment
from prefect.events import DeploymentTriggerTypes
from prefect.schedules import Cron, Interval, Schedule
from pydantic import TypeAdapter

PREFECT_YAML = Path(__file__).resolve().parent.parent / "prefect.yaml"
ONBOARDING = "uniroute-onboard/on-results-landed"


def deployment_specs(path: Path = PREFECT_YAML) -> list[dict[str, Any]]:
    """The `deployments` entries of prefect.yaml."""
    return yaml.safe_load(path.read_text())["deployments"]


def _flow(entrypoint: str):
    """The flow object of a `flows/<file>.py:<function>` entrypoint, imported as a module of this repository."""
    path, name = entrypoint.split(":")
    return getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), name)


def _schedule(spec: dict[str, Any]) -> Schedule:
    """A prefect.yaml schedule entry (`cron` or `interval` in seconds, optional timezone)."""
    rest = {k: v for k, v in spec.items() if k not in ("cron", "interval")}
    if "cron" in spec:
        return Cron(spec["cron"], **rest)
    return Interval(timedelta(seconds=spec["interval"]), **rest)


def runner_deployment(spec: dict[str, Any]) -> RunnerDeployment:
    """One prefect.yaml entry as a deployment to serve: same name, schedules, triggers and concurrency limit."""
    limit = spec.get("concurrency_limit")
    return _flow(spec["entrypoint"]).to_deployment(
        name=spec["name"],
        description=spec.get("description"),
        tags=spec.get("tags"),
        schedules=[_schedule(s) for s in spec.get("schedules") or []],
        triggers=[TypeAdapter(DeploymentTriggerTypes).validate_python(t) for t in spec.get("triggers") or []],
        concurrency_limit=ConcurrencyLimitConfig(**limit) if isinstance(limit, dict) else limit,
    )


def all_deployments() -> list[RunnerDeployment]:
    """Every deployment of prefect.yaml, ready for `prefect.serve(*all_deployments())`."""
    return [runner_deployment(spec) for spec in deployment_specs()]


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
