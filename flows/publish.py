"""Scheduled publishing flow: routing tables of the champion router for the active pool."""

from __future__ import annotations

from prefect import flow, get_run_logger, task

from flows.report import publish_run_name, rename_run, report_publish, started
from flows.transient import RETRY_WHEN_STORE_BUSY
from uniroute.pipeline import publish
from uniroute.settings import Settings, apply_offline_environment

publish_snapshot = task(publish.publish_champion, name="publish-snapshot", **RETRY_WHEN_STORE_BUSY)


@flow(name="uniroute-publish", flow_run_name=started("publish"))
def publish_routing_tables(force: bool = False) -> dict:
    """Publish a new snapshot if the champion or the pool changed since the current one."""
    settings = Settings()
    apply_offline_environment(settings)
    result = publish_snapshot(
        settings.db_path, settings.published_dir, settings.mlflow_uri, settings.mlflow_artifacts, force=force
    )
    get_run_logger().info("%s: %s", result.version, result.reason)
    report_publish(result, settings)
    rename_run(publish_run_name(result))
    return result.as_dict()
