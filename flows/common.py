"""What every flow does first: settings from the environment, and reconciling what is derived from the store."""

from __future__ import annotations

from prefect import get_run_logger, task

from uniroute import store
from uniroute.pipeline.reconcile import reconcile
from uniroute.settings import Settings, apply_offline_environment


def flow_settings() -> Settings:
    """Settings from the environment, with every download and telemetry switch off."""
    settings = Settings()
    apply_offline_environment(settings)
    return settings


@task(name="reconcile")
def reconcile_store(settings: Settings) -> list[str]:
    """Finish what a killed run left derived but undone (MLflow, `published/current`, stray files)."""
    if not settings.db_path.exists():
        return []
    logger = get_run_logger()
    with store.session(settings.db_path, "reconcile", wait_seconds=settings.store_wait_seconds,
                       on_wait=logger.info) as s:
        report = reconcile(s, settings.published_dir, *settings.tracking,
                           inbox_dir=settings.inbox_dir, cache_dir=settings.cache_dir)
    for finding in report.findings:
        if finding.status in ("repaired", "broken"):
            logger.warning(finding.line())
        elif finding.status == "synced":
            logger.info(finding.line())
    return [f.line() for f in report.findings if f.status != "ok"]
