"""Sessions: every state-changing operation opens the store once and changes it in one transaction.

A session takes the writer lock (waiting, and saying for whom), opens one connection, records the run in
`operation_events`, and begins the transaction the operation works in. Leaving the block normally appends
'succeeded' inside that transaction and commits: the run's changes and the record that it succeeded land
together or not at all. An exception rolls everything back and records 'failed'; a kill leaves only the
'started' event, which the next session marks 'interrupted'. Operations take the session's connection from
their caller and never open the store or begin a transaction themselves.

`atomic=False` is for filling a cache (embeddings), where each statement commits on its own so a run killed
half-way keeps what it finished: every cached row is final.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from uniroute.store.connection import DamagedStore, StoreError, connect, opened
from uniroute.store.lock import DEFAULT_WAIT_SECONDS, LAST_RETRY_SECONDS, acquire_writer_lock
from uniroute.store.queries import execute, query

log = logging.getLogger(__name__)


@dataclass
class Session:
    """An open session: the connection an operation works through, and what it records about the run."""

    con: duckdb.DuckDBPyConnection
    db_path: Path
    operation: str
    op_id: str
    detail: str = ""  # the run's one-line summary, recorded with 'succeeded'
    interrupted: list[str] = field(default_factory=list)  # earlier runs found killed when this one started
    # Work derived from what the run committed (switching `published/current`): run after the commit, while
    # the writer lock is still held, so no later run can commit in between. A failure there is logged, not
    # raised: the run's changes stand, and reconciliation redoes the derived step.
    after_commit: list[Callable[[], None]] = field(default_factory=list)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _record(con: duckdb.DuckDBPyConnection, op_id: str, kind: str, event: str, inputs: str = "",
            detail: str = "") -> None:
    execute(con, "operation_event", op_id=op_id, kind=kind, event=event, at=_now(), pid=os.getpid(),
            inputs=inputs or None, detail=detail[:2000] or None)


def _connect_waiting(
    db_path: Path, deadline: float, on_wait: Callable[[str], None] | None
) -> duckdb.DuckDBPyConnection:
    """A read-write connection; a reader process holding DuckDB's file lock is waited for until the deadline."""
    delay, told = 0.05, False
    while True:
        try:
            return connect(db_path)
        except StoreError as exc:
            if (not isinstance(exc.__cause__, duckdb.IOException) or isinstance(exc, DamagedStore)
                    or time.monotonic() >= deadline):
                raise
            if not told and on_wait is not None:
                on_wait("waiting for the store: another process has it open for reading")
                told = True
            time.sleep(delay)
            delay = min(delay * 2, LAST_RETRY_SECONDS)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


@contextmanager
def session(
    db_path: Path,
    operation: str,
    inputs: str = "",
    wait_seconds: float = DEFAULT_WAIT_SECONDS,
    on_wait: Callable[[str], None] | None = None,
    atomic: bool = True,
) -> Iterator[Session]:
    """One writer session for `operation` on the store at db_path (see the module docstring)."""
    started = time.monotonic()
    lock = acquire_writer_lock(db_path, operation, wait_seconds, on_wait)
    try:
        con = _connect_waiting(db_path, started + wait_seconds, on_wait)
        try:
            interrupted = query(con, "operations_unfinished")
            for row in interrupted.itertuples(index=False):
                _record(con, row.op_id, row.kind, "interrupted", detail=f"pid {row.pid} ended without finishing")
                log.warning("an earlier `%s` run (pid %s, started %s) was interrupted", row.kind, row.pid, row.started)
            op_id = uuid.uuid4().hex
            _record(con, op_id, operation, "started", inputs=inputs)
            s = Session(con, Path(db_path), operation, op_id,
                        interrupted=[f"{r.kind} (pid {r.pid})" for r in interrupted.itertuples(index=False)])
            if atomic:
                con.execute("begin transaction")
            try:
                yield s
            except BaseException as exc:
                if atomic:
                    with contextlib.suppress(duckdb.Error):  # a broken connection has nothing to roll back
                        con.execute("rollback")
                event = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
                log.debug("`%s` %s:\n%s", operation, event, traceback.format_exc())
                _record(con, op_id, operation, event, detail=_one_line(exc))
                raise
            _record(con, op_id, operation, "succeeded", detail=s.detail)
            if atomic:
                con.execute("commit")
            for step in s.after_commit:
                try:
                    step()
                except Exception as exc:  # the committed run stands; `uniroute doctor` redoes the derived step
                    log.warning("`%s` committed, but a follow-up step failed (%s); `uniroute doctor` repairs it",
                                operation, _one_line(exc))
        finally:
            con.close()
    finally:
        lock.release()



@contextmanager
def inspection(db_path: Path, operation: str) -> Iterator[Session]:
    """A read-only stand-in for a session, for checks on a home that cannot be written (`doctor --check` on a
    read-only replica): no lock, no record, no transaction; any write fails in DuckDB."""
    with opened(db_path, read_only=True) as con:
        yield Session(con, Path(db_path), operation, op_id="")
