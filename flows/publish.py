"""Scheduled publishing flow: routing tables of the champion router for the active pool."""

from __future__ import annotations

from prefect import flow, get_run_logger

from flows.common import flow_settings, library_log_in_run, reconcile_store
from flows.report import publish_run_name, rename_run, report_publish, started
from uniroute import store
from uniroute.pipeline import publish


@flow(name="uniroute-publish", flow_run_name=started("publish"))
def publish_routing_tables(force: bool = False) -> dict:
    """Publish a new snapshot if the champion or the pool changed since the newest one."""
    with library_log_in_run():
        settings = flow_settings()
        logger = get_run_logger()
        reconcile_store(settings)
        with store.session(settings.db_path, "publish", wait_seconds=settings.store_wait_seconds,
                           on_wait=logger.info) as s:
            result = publish.publish_champion(s.con, settings.published_dir, force=force)
            publish.switch_current_after_commit(s, settings.published_dir, result)
            s.detail = result.line()
        logger.info("%s: %s", result.version, result.reason)
        if result.published:
            reconcile_store(settings)
        report_publish(result, settings)
        rename_run(publish_run_name(result))
        return result.as_dict()
