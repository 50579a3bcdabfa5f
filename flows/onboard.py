"""Onboarding flow, triggered by the `uniroute.results.landed` event: new models become routable."""

from __future__ import annotations

from prefect import flow, get_run_logger

from flows.common import flow_settings, reconcile_store
from uniroute import store
from uniroute.pipeline import onboard, registry

RESULTS_LANDED = "uniroute.results.landed"
MODELS_LABEL = "uniroute.models"  # event resource label: comma-separated model names


@flow(name="uniroute-onboard")
def onboard_models(models: str) -> dict:
    """Compute Psi rows for the comma-separated `models` on the champion's frozen clusters."""
    settings = flow_settings()
    logger = get_run_logger()
    names = [m for m in (x.strip() for x in models.split(",")) if m]
    reconcile_store(settings)
    with store.session(settings.db_path, "onboard", inputs=models, wait_seconds=settings.store_wait_seconds,
                       on_wait=logger.info) as s:
        if registry.champion_id(s.con) is None:
            # Results that land before the first build are picked up by that build; nothing to onboard onto.
            logger.info("no champion router yet: %s will join at the next build", ", ".join(names))
            return {"skipped": True, "models": names}
        result = onboard.onboard_models(s.con, names)
        s.detail = result.line()
    logger.info(result.line())
    reconcile_store(settings)
    return result.as_dict()
