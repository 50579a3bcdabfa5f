"""Scheduled publishing flow: routing tables of the champion router for the active pool."""

from __future__ import annotations

from prefect import flow, get_run_logger

from flows.budget_artifact import report_budgets
from flows.common import flow_context, flow_settings, library_log_in_run, reconcile_store
from flows.report import publish_run_name, rename_run, report_publish, started
from uniroute import operations


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
        rename_run(publish_run_name(result))
        return result.as_dict()
