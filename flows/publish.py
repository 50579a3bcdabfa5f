"""Scheduled publishing flow: routing tables of the champion router for the active pool."""

from __future__ import annotations

from prefect import flow, get_run_logger

from uniroute.pipeline import publish
from uniroute.settings import Settings, apply_offline_environment


@flow(name="uniroute-publish")
def publish_routing_tables(force: bool = False) -> dict:
    """Publish a new snapshot if the champion or the pool changed since the current one."""
    settings = Settings()
    apply_offline_environment(settings)
    result = publish.publish_champion(
        settings.db_path, settings.published_dir, settings.mlflow_uri, settings.mlflow_artifacts, force=force
    )
    get_run_logger().info("%s: %s", result.version, result.reason)
    return result.as_dict()
