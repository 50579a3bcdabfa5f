"""Scheduled publishing flow: routing tables of the champion router for the active pool, and the drift check
that starts the nightly build early (`uniroute.traffic.drifted`, prefect.yaml's trigger) when the traffic moved
away from the champion's training prompts."""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.events import emit_event

from flows.artifacts import publish_run_name, rename_run, report_publish, started
from flows.budget_artifact import report_budgets
from flows.common import flow_context, flow_settings, library_log_in_run, reconcile_store
from uniroute import operations
from uniroute.settings import Settings

TRAFFIC_DRIFTED = "uniroute.traffic.drifted"


def announce_drift(settings: Settings) -> dict:
    """Check the champion's traffic for drift (operations.drift) and emit TRAFFIC_DRIFTED when it drifted and was
    not announced yet for this champion and training data; then record the announcement. Emitted before recorded: a
    kill between the two emits it once more, never not at all."""
    logger = get_run_logger()
    ctx = flow_context(settings)
    checked = operations.drift(ctx, operations.drift_thresholds(settings))
    logger.info(checked.line())
    if checked.announce:
        emit_event(event=TRAFFIC_DRIFTED, resource={"prefect.resource.id": f"uniroute.traffic.{checked.router_id}"},
                   payload=checked.as_dict())
        logger.info("emitted %s for champion %s", TRAFFIC_DRIFTED, checked.router_id)
        operations.drift_announced(ctx, checked)
    return checked.as_dict()


@flow(name="uniroute-publish", flow_run_name=started("publish"))
def publish_routing_tables(force: bool = False) -> dict:
    """Publish a new snapshot if the champion or the pool changed since the newest one."""
    with library_log_in_run():
        settings = flow_settings()
        logger = get_run_logger()
        reconcile_store(settings)
        result = operations.publish(flow_context(settings), force=force)
        logger.info("%s: %s", result.version, result.reason)
        report_publish(result, settings)
        if result.published:
            report_budgets(str(result.version), settings)
        drift = announce_drift(settings)
        rename_run(publish_run_name(result))
        return {**result.as_dict(), "drift": drift}
