"""Inbox flow: ingest every new file in $UNIROUTE_HOME/inbox and the decision spool, announce models whose validation
results landed, and summarise yesterday's traffic as an artifact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prefect import flow, get_run_logger
from prefect.events import emit_event

from flows.artifacts import inbox_run_name, rename_run, report_traffic, started
from flows.common import flow_context, flow_settings, library_log_in_run, reconcile_store
from flows.onboard import MODELS_LABEL, RESULTS_LANDED
from uniroute import operations


@flow(name="uniroute-ingest-inbox", flow_run_name=started("inbox"))
def ingest_inbox() -> list[dict]:
    """Ingest the inbox (files move to done/ or failed/); emit `uniroute.results.landed` per file with new models."""
    with library_log_in_run():
        settings = flow_settings()
        logger = get_run_logger()
        reconcile_store(settings)
        # The event onboards what landed (flows/onboard.py), so this run only ingests.
        outcomes = operations.inbox(flow_context(settings), onboard_landed=False).outcomes
        for outcome in outcomes:
            logger.info("%s: %s%s", outcome.name, outcome.status, f" ({outcome.error})" if outcome.error else "")
            if outcome.landed_models:
                emit_event(
                    event=RESULTS_LANDED,
                    # Models landed: the file was ingested, so it has a summary.
                    resource={"prefect.resource.id":
                              f"uniroute.results.{outcome.summary.file_hash[:16]}",  # type: ignore[union-attr]
                              MODELS_LABEL: ",".join(outcome.landed_models)},
                    payload={"file": outcome.name, "models": list(outcome.landed_models)},
                )
                logger.info("emitted %s for %s", RESULTS_LANDED, ", ".join(outcome.landed_models))
        rename_run(inbox_run_name(outcomes))
        report_traffic(settings, datetime.now(UTC).date() - timedelta(days=1))  # yesterday's, as of this run
        return [outcome.as_dict() for outcome in outcomes]
