"""Drift as an operation (the read side): the champion's recent traffic against its training prompts, read through
a read-only connection so a scheduled check never waits for a writer (it skips, saying so, while one holds the
store). The flow that calls it emits the event, then records it (drift_announced: one write, so the next checks
of the same champion on the same training data do not emit it again); the library computes (pipeline/drift.py)."""

from __future__ import annotations

from uniroute import store
from uniroute.operations.context import Context
from uniroute.pipeline.drift import DriftCheck, DriftThresholds, check_drift, record_announcement
from uniroute.settings import Settings
from uniroute.store.embeddings import expose_view


def drift_thresholds(settings: Settings) -> DriftThresholds:
    """The drift_* settings as thresholds."""
    return DriftThresholds(settings.drift_days, settings.drift_min_decisions, settings.drift_mix_threshold,
                           settings.drift_far_threshold)


def drift(ctx: Context, thresholds: DriftThresholds) -> DriftCheck:
    """Has the champion's traffic drifted from its training prompts? (No check before a store or while a writer
    holds it: the next scheduled run checks.)"""
    if not ctx.db_path.exists():
        return DriftCheck(False, None, 0, None, None, f"no drift check: no store at {ctx.db_path}")
    try:
        # Access stays on: the training prompts' vectors are read from the embeddings dataset's files.
        con = store.open_read_only(ctx.db_path, access_off=False)
    except store.StoreLocked:
        holder = store.current_holder(ctx.db_path)
        who = holder.line() if holder is not None else "another process"
        return DriftCheck(False, None, 0, None, None, f"no drift check: the store is held by {who}")
    try:
        expose_view(con)
        return check_drift(con, thresholds)
    finally:
        con.close()


def drift_announced(ctx: Context, check: DriftCheck) -> bool:
    """Record that the flow emitted the drift event for check's champion on its training data, so later checks of
    the same champion and data do not emit it again; False when nothing was recorded (already announced)."""
    with ctx.session("drift", inputs=check.router_id or "") as s:
        recorded = record_announcement(s.con, check)
        s.detail = (f"drift announced for champion {check.router_id}" if recorded
                    else f"drift already announced for champion {check.router_id}")
    return recorded
