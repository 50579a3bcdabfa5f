"""Onboarding flow, triggered by the `uniroute.results.landed` event: new models become routable."""

from __future__ import annotations

from prefect import flow, get_run_logger, task

from flows.report import rename_run, report_onboarding
from flows.transient import RETRY_WHEN_STORE_BUSY
from uniroute.pipeline import onboard, registry
from uniroute.settings import Settings, apply_offline_environment

RESULTS_LANDED = "uniroute.results.landed"
MODELS_LABEL = "uniroute.models"  # event resource label: comma-separated model names


onboard_on_champion = task(onboard.onboard_models, name="onboard-on-champion", **RETRY_WHEN_STORE_BUSY)


@flow(name="uniroute-onboard", flow_run_name="onboard {models}")
def onboard_models(models: str) -> dict:
    """Compute Psi rows for the comma-separated `models` on the champion's frozen clusters."""
    settings = Settings()
    apply_offline_environment(settings)
    names = [m for m in (x.strip() for x in models.split(",")) if m]
    if not registry.has_champion(settings.db_path):
        # Results that land before the first build are picked up by that build; nothing to onboard onto.
        get_run_logger().info("no champion router yet: %s will join at the next build", ", ".join(names))
        rename_run(f"onboard {', '.join(names)}: waits for the first build")
        return {"skipped": True, "models": names}
    result = onboard_on_champion(
        settings.db_path, names, settings.mlflow_uri, settings.mlflow_artifacts
    )
    get_run_logger().info(result.line())
    report_onboarding(result, settings)
    rename_run(f"onboarded {', '.join(result.models)} -> {result.router_id}")
    return result.as_dict()
