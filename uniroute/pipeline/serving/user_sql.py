"""`uniroute sql`: a user's query on the store, or on the published snapshot while the store is busy.

Both run in the store's sandbox (read-only, no file or network access, memory and time limits), streamed
(store.sql_stream: rows in batches, a row cap, the timeout covering fetching and printing, Ctrl-C). While a writer
holds the store, the query runs on an in-memory database holding the `current` snapshot's tables under the
names the store uses for them (`current_routing_table`, `current_budgets`, `model_cluster_errors`, ...), and
the answer says which published version it came from. A query on tables only the store has (`results`, ...)
waits for the writer instead, bounded, saying once for whom.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from uniroute import store
from uniroute.pipeline.serving import snapshot
from uniroute.pipeline.serving.calibration import VALIDATION
from uniroute.routers.cluster.psi import SPARSE_CELL
from uniroute.store.sql_stream import SqlInterrupted, StreamedQuery

# The store's views, rebuilt over a snapshot's tables (same names and columns as in sql/schema/004_views.sql:
# tests/sql/test_columns.py compares them).
SNAPSHOT_VIEWS = {
    "current_routing_table": "select version, router_id, cluster, grid, budget, lam, model, fallbacks, "
                             "provisional from published_routes",
    "current_budgets": "select version, grid, budget, lam, expected_score, expected_cost, calibration "
                       "from published_budgets",
    "model_cluster_errors": "select router_id, model, cluster, loss as error, 1 - loss as accuracy, n as prompts, "
                            "error_lo, error_hi, routing_loss as routing_error, sparse from psi",
}
# Columns a snapshot published before they existed lacks, filled as sql/migrations/001 fills the store's old rows:
# routing by the measured cell, sparse by the threshold, no interval.
LATER_PSI_COLUMNS = ("routing_loss", "error_lo", "error_hi", "sparse")


@dataclass(frozen=True)
class UserQuery:
    """A query's rows, streamed (iterate `frames`, then `rows.truncated` says whether the row cap cut them; close
    `rows`), and, when the store was busy, the line saying which snapshot answered."""

    rows: StreamedQuery
    frames: Iterator[pd.DataFrame]
    note: str | None = None


def _started(con: duckdb.DuckDBPyConnection, sql: str, sandbox: store.Sandbox, max_rows: int | None,
             cancel: threading.Event | None) -> tuple[StreamedQuery, Iterator[pd.DataFrame]]:
    """The query running on con (which it now owns), its first batch already fetched so errors surface here."""
    try:
        rows = StreamedQuery(con, sql, sandbox, max_rows, cancel)
    except BaseException:
        con.close()
        raise
    frames = iter(rows)
    try:
        first = next(frames)
    except BaseException:
        rows.close()
        raise
    return rows, itertools.chain([first], frames)


def snapshot_tables(snap: snapshot.Snapshot) -> dict[str, pd.DataFrame]:
    """The tables of a snapshot, keyed by the store table they mirror."""
    router_id, version = snap.manifest["router_id"], snap.version
    routes = snap.routes if "fallbacks" in snap.routes.columns else snap.routes.assign(fallbacks=None)
    if "provisional" not in routes.columns:  # published before the evidence gate: nothing was gated
        routes = routes.assign(provisional=None)
    tables = {
        "published_routes": routes.assign(version=version, router_id=router_id),
        # A snapshot published before budgets said their calibration was calibrated on the validation prompts.
        "published_budgets": snap.budgets.assign(version=version, **({} if "calibration" in snap.budgets.columns
                                                                    else {"calibration": VALIDATION})),
        "pool": pd.DataFrame({"model": snap.manifest["pool"]}),
    }
    if snapshot.PSI_FILE in snap.files:
        psi = snap.table(snapshot.PSI_FILE).assign(router_id=router_id)
        filled = {"routing_loss": psi["loss"], "error_lo": None, "error_hi": None, "sparse": psi["n"] < SPARSE_CELL}
        tables["psi"] = psi.assign(**{c: filled[c] for c in LATER_PSI_COLUMNS if c not in psi.columns})
    return tables


def _store_when_free(db_path: Path, sql: str, sandbox: store.Sandbox, max_rows: int | None,
                     cancel: threading.Event | None, wait_seconds: float,
                     on_wait: Callable[[str], None] | None, who: str) -> UserQuery:
    """The query on the store once the writer holding it lets go (bounded: StoreBusy after wait_seconds)."""
    if on_wait is not None:
        on_wait(f"waiting for the store: {who} holds it, and the published snapshot does not have the tables "
                f"this query reads (up to {wait_seconds:.0f} s)")
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return UserQuery(*_started(store.open_store_sandbox(db_path, sandbox), sql, sandbox, max_rows, cancel))
        except store.StoreLocked:
            if time.monotonic() >= deadline:
                raise store.StoreBusy(f"the store is busy: {who} holds it; gave up after {wait_seconds:.0f} s "
                                      "(the published snapshot has current_routing_table, current_budgets, "
                                      "model_cluster_errors, published_routes, published_budgets, pool, psi)") from None
            if cancel is not None and cancel.is_set():
                raise SqlInterrupted("interrupted (Ctrl-C) while waiting for the store") from None
            time.sleep(0.2)


def run_user_sql(db_path: Path, published_dir: Path, sql: str, sandbox: store.Sandbox, max_rows: int | None = None,
                 cancel: threading.Event | None = None, wait_seconds: float = 120.0,
                 on_wait: Callable[[str], None] | None = None) -> UserQuery:
    """Start a user's query, sandboxed and streamed, on the store or, while a writer holds it, on the current
    snapshot; a query on tables only the store has waits (bounded) for the writer to finish."""
    try:
        return UserQuery(*_started(store.open_store_sandbox(db_path, sandbox), sql, sandbox, max_rows, cancel))
    except store.StoreLocked:
        holder = store.current_holder(db_path)
        who = holder.line() if holder is not None else "another process"
    try:
        snap = snapshot.read_current(published_dir)
    except snapshot.PublishError:
        return _store_when_free(db_path, sql, sandbox, max_rows, cancel, wait_seconds, on_wait, who)
    tables = snapshot_tables(snap)
    views = {name: select for name, select in SNAPSHOT_VIEWS.items() if "psi" in tables or "psi" not in select}
    try:
        rows, frames = _started(store.sandbox_over(tables, views, sandbox), sql, sandbox, max_rows, cancel)
    except store.StoreError as exc:
        if "Catalog Error" not in str(exc):
            raise
        return _store_when_free(db_path, sql, sandbox, max_rows, cancel, wait_seconds, on_wait, who)
    note = (f"the store is held by {who}: answered from published snapshot {snap.version} "
            f"(tables: {', '.join(sorted([*tables, *views]))})")
    return UserQuery(rows, frames, note)
