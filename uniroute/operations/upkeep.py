"""Reconciliation as an operation: after every state-changing operation, at the start of every flow, and as
`uniroute doctor` (which may only check). One function, so every surface checks the same invariants."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from uniroute import store
from uniroute.operations.context import Context
from uniroute.pipeline.reconcile import Report, reconcile

# DuckDB's cap for a reconciliation. Uncapped, DuckDB caches up to 80% of RAM: after a 1M x 100 build the
# reconciliation's pass over the store grew the driver from 0.8 to 1.6 GB, its peak. Its queries spill beyond the cap.
RECONCILE_DUCKDB_MEMORY = "256MB"

# Findings a user should look at: an invariant that did not hold (a sign of an interrupted run) or still does not.
NOTEWORTHY = ("repaired", "broken")


def reconciled(ctx: Context, operation: str = "reconcile", repair: bool = True, mlflow: bool = True) -> Report:
    """Check every invariant between the store and what is derived from it (MLflow, `published/current`, the
    inbox) and, with repair, restore the derived state; noteworthy findings go to ctx.warn. mlflow False leaves
    MLflow to a follow-up (operations.mlflow_after): the store's side only."""
    if operation == "reconcile" and not ctx.db_path.exists():  # nothing stored: nothing derived from it either
        return Report()
    inputs = "" if operation == "reconcile" else ("repair" if repair else "check")

    def checked(s: store.Session) -> Report:
        # doctor (an explicit repair) always onboards what is missing; the routine reconciliation as its context says
        return reconcile(s, ctx.published_dir, ctx.tracking_uri if mlflow else None, ctx.artifact_root,
                         inbox_dir=ctx.inbox_dir,
                         repair=repair, cache_dir=ctx.cache_dir,
                         onboard_missing=ctx.onboard_missing or operation != "reconcile",
                         min_answers=ctx.min_val_answers, tmp_dir=ctx.tmp_dir, gate=ctx.gate,
                         spool_dir=ctx.spool_dir)

    if not repair:
        # "Repair nothing" writes nothing either: no operations row, no killed run marked, no schema upgrade, no
        # lock file; the store opened read-only (DuckDB refuses any write), the home's tree left as it was.
        with store.inspection(ctx.db_path, operation) as s, store.memory_limited(s.con, RECONCILE_DUCKDB_MEMORY):
            report = checked(s)
            _unfinished_runs(s, report)
        reason = _read_only_reason(ctx.db_path.parent)
        if reason is not None:
            report.add("home", "ok", f"{ctx.db_path.parent} is read-only ({reason}): checked without writing; route "
                       "and sql answer, writers refuse until it is writable")
        return report
    with ctx.session(operation, inputs=inputs) as s, store.memory_limited(s.con, RECONCILE_DUCKDB_MEMORY):
        report = checked(s)
        if operation != "reconcile":
            s.detail = f"{len(report.repaired)} repaired, healthy={report.healthy}"
    if operation == "reconcile":
        for finding in report.findings:
            if finding.status in NOTEWORTHY:
                # "mlflow: <what is wrong>" for what stays broken (the words the CLI has always used), the status
                # named for what was repaired
                ctx.warn(f"{finding.check}: {finding.detail}" if finding.status == "broken"
                         else f"{finding.check} {finding.status}: {finding.detail}")
    return report


def _read_only_reason(folder: Path) -> str | None:
    """Why a folder cannot be written (a read-only mount, no permission), found without writing; None if it can."""
    with contextlib.suppress(OSError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS)
    if not os.access(folder, os.W_OK):
        return os.strerror(errno.EACCES)
    return None


def _unfinished_runs(s: store.Session, report: Report) -> None:
    """On a home checked read-only, killed runs cannot be marked: name them instead of saying none was left."""
    unfinished = store.query(s.con, "operations_unfinished")
    if unfinished.empty:
        return
    report.findings = [f for f in report.findings if f.check != "operations"]
    runs = ", ".join(f"{r.kind} (pid {r.pid})" for r in unfinished.itertuples(index=False))
    report.add("operations", "broken", f"runs left unfinished: {runs}; `uniroute doctor` on a writable home marks "
               "them interrupted")


def doctor(ctx: Context, check: bool = False) -> Report:
    """`uniroute doctor`: the full report (the caller prints every line), repairing unless check."""
    return reconciled(ctx, "doctor", repair=not check)
