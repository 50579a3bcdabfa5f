"""Onboarding flow, triggered by the `uniroute.results.landed` event: new models become routable."""

from __future__ import annotations

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.artifacts import onboard_run_name, rename_run, report_onboarding
from flows.common import flow_context, flow_settings, library_log_in_run, reconcile_store
from flows.transient import RETRY_WHEN_STORE_BUSY
from uniroute import operations
from uniroute.settings import Settings, comma_separated

RESULTS_LANDED = "uniroute.results.landed"
MODELS_LABEL = "uniroute.models"  # event resource label: comma-separated model names


# The one run nobody schedules again: if a build holds the store past the session's wait, try again later.
@task(name="onboard-on-champion", cache_policy=NO_CACHE, **RETRY_WHEN_STORE_BUSY)
def onboard_on_champion(settings: Settings, names: tuple[str, ...]) -> operations.Onboarding:
    """Psi rows for `names` on the champion's frozen clusters (before the first build: they join at the next)."""
    return operations.onboard(flow_context(settings), names)


@flow(name="uniroute-onboard", flow_run_name="onboard {models}")
def onboard_models(models: str) -> dict:
    """Compute Psi rows for the comma-separated `models` on the champion's frozen clusters."""
    with library_log_in_run():
        settings = flow_settings()
        reconcile_store(settings)
        done = onboard_on_champion(settings, comma_separated(models))
        get_run_logger().info(done.line())
        if done.result is None:  # no champion yet: the results are stored, the next build routes the models
            rename_run(done.line())
            return done.as_dict()
        report_onboarding(done.result, settings)
        rename_run(onboard_run_name(done.result))
        return done.as_dict()
