"""Onboarding flow, triggered by the `uniroute.results.landed` event: new models become routable."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_settings, library_log_in_run, reconcile_store
from flows.report import onboard_run_name, rename_run, report_onboarding
from flows.transient import RETRY_WHEN_STORE_BUSY
from uniroute import store
from uniroute.pipeline import onboard, registry
from uniroute.pipeline.onboard import OnboardResult

RESULTS_LANDED = "uniroute.results.landed"
MODELS_LABEL = "uniroute.models"  # event resource label: comma-separated model names


# The one run nobody schedules again: if a build holds the store past the session's wait, try again later.
@task(name="onboard-on-champion", cache_policy=NO_CACHE, **RETRY_WHEN_STORE_BUSY)
def onboard_on_champion(db_path: Path, wait_seconds: float, names: list[str], models: str,
                        cache_dir: Path) -> OnboardResult | None:
    """Psi rows for `names` on the champion's frozen clusters; None when there is no champion yet."""
    logger = get_run_logger()
    with store.session(db_path, "onboard", inputs=models, wait_seconds=wait_seconds, on_wait=logger.info) as s:
        if registry.champion_id(s.con) is None:
            # Results that land before the first build are picked up by that build; nothing to onboard onto.
            logger.info("no champion router yet: %s will join at the next build", ", ".join(names))
            return None
        result = onboard.onboard_models(s.con, names, cache_dir=cache_dir)
        s.detail = result.line()
    return result


@flow(name="uniroute-onboard", flow_run_name="onboard {models}")
def onboard_models(models: str) -> dict:
    """Compute Psi rows for the comma-separated `models` on the champion's frozen clusters."""
    with library_log_in_run():
        settings = flow_settings()
        logger = get_run_logger()
        names = [m for m in (x.strip() for x in models.split(",")) if m]
        reconcile_store(settings)
        result = onboard_on_champion(settings.db_path, settings.store_wait_seconds, names, models, settings.cache_dir)
        if result is None:
            rename_run(f"onboard {', '.join(names)}: waits for the first build")
            return {"skipped": True, "models": names}
        logger.info(result.line())
        reconcile_store(settings)
        report_onboarding(result, settings)
        rename_run(onboard_run_name(result))
        return result.as_dict()
