"""A user's query streamed: its rows fetched in Arrow batches under the sandbox's memory limit, wall-clock timeout
and row cap, and stopped at once on Ctrl-C.

Materialising a result (a DataFrame, then its text) ran outside both limits: 10M rows took 4.9 GB against a
1 GB memory limit, and printing went on long after the timeout. Here DuckDB streams the last statement's rows; a
worker thread fetches them into a queue of QUEUE_BATCHES batches (so little waits in memory) while the caller's
thread takes them, checking the deadline and a cancel event between waits of at most POLL_SECONDS. The deadline
therefore covers fetching and printing, and Ctrl-C (an Event the CLI's signal handler sets) reaches DuckDB's
`interrupt` from a thread that is not blocked inside DuckDB, which a signal handler alone could not.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from uniroute.store.connection import StoreError
from uniroute.store.sandbox import Sandbox, SqlRefused, SqlTimeout, checked_statements

BATCH_ROWS = 10_000
QUEUE_BATCHES = 2
POLL_SECONDS = 0.05
SPILL_CHECK_SECONDS = 0.25
_END = object()
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b)?\s*$", re.IGNORECASE)


def size_bytes(text: str) -> int:
    """Bytes in a DuckDB size setting ('2GB' is 2e9, '2GiB' 2**31); ValueError naming the text otherwise."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: {text!r} (give e.g. 500MB or 2GB)")
    unit = (match.group(2) or "b").lower()
    base = 1024 if "i" in unit else 1000
    return int(float(match.group(1)) * base ** "bkmgt".index(unit[0]))


def spilled_bytes(folder: Path) -> int:
    """Disk space the files in folder take (allocated blocks: DuckDB's spill files are sparse)."""
    with contextlib.suppress(FileNotFoundError):
        return sum(e.stat().st_blocks * 512 for e in os.scandir(folder) if e.is_file(follow_symlinks=False))
    return 0


def _first_nonempty(reader: Iterable[Any]) -> Iterator[Any]:
    """The reader's batches up to and including the first with rows (never the rest)."""
    for batch in reader:  # pyarrow RecordBatches (pyarrow has no types)
        yield batch
        if batch.num_rows:
            return


class SqlInterrupted(StoreError):
    """User SQL stopped by the user (Ctrl-C)."""


def _user_error(exc: duckdb.Error) -> StoreError:
    """DuckDB's error as the sandbox reports it: refused (permissions) or failed."""
    if isinstance(exc, duckdb.PermissionException):
        return SqlRefused(f"refused: {str(exc).splitlines()[0]}")
    return StoreError(f"query failed: {str(exc).splitlines()[0]}")


class StreamedQuery:
    """The rows of a sandboxed query, as DataFrames of up to BATCH_ROWS rows; at most max_rows rows in all
    (`truncated` says there were more). Iterate once, then close (or use it as a context manager)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, sql: str, sandbox: Sandbox, max_rows: int | None = None,
                 cancel: threading.Event | None = None, on_close: Callable[[], None] | None = None) -> None:
        self._con, self._sandbox, self._on_close = con, sandbox, on_close
        self._statements = checked_statements(con, sql)
        self.max_rows, self.truncated = max_rows, False
        self._cancel = cancel or threading.Event()
        self._stop = threading.Event()
        self._queue: queue.Queue = queue.Queue(QUEUE_BATCHES)
        self._deadline = time.monotonic() + sandbox.timeout_seconds
        # DuckDB 2.0 does not hold a sort's spill to max_temp_directory_size (10 MB allowed 940 MB on disk), so the
        # reader measures the folder itself.
        self._spill_limit = None if sandbox.temp_directory is None else size_bytes(sandbox.max_temp_size)
        self._spill_checked = 0.0
        self._worker = threading.Thread(target=self._fetch, name="uniroute-sql", daemon=True)
        self._worker.start()

    # ---- the worker: DuckDB's side ------------------------------------------------------------------------

    def _put(self, item: object) -> bool:
        """Hand an item to the reader; False once the reader has stopped listening."""
        while not self._stop.is_set():
            with contextlib.suppress(queue.Full):
                self._queue.put(item, timeout=POLL_SECONDS)
                return True
        return False

    def _fetch(self) -> None:
        try:
            for text in self._statements[:-1]:  # earlier statements run (their errors count), their rows are dropped
                for _ in self._con.sql(text).to_arrow_reader(BATCH_ROWS):
                    if self._stop.is_set():
                        return
            reader = self._con.sql(self._statements[-1]).to_arrow_reader(BATCH_ROWS)
            left = self.max_rows
            sent = False
            for batch in reader:
                if self._stop.is_set():
                    return
                if left is not None and batch.num_rows > left:
                    batch, self.truncated = batch.slice(0, left), True
                if batch.num_rows and not self._put(batch.to_pandas()):
                    return
                sent = sent or batch.num_rows > 0
                if left is not None:
                    left -= batch.num_rows
                    if left == 0:
                        # One batch more is the only way to know whether the cap cut anything off.
                        self.truncated = self.truncated or any(b.num_rows for b in _first_nonempty(reader))
                        break
            if not sent and not self._put(reader.schema.empty_table().to_pandas()):
                return
            self._put(_END)
        except duckdb.InterruptException:
            self._put(_END)  # the reader stopped it, and raises its own reason
        except duckdb.Error as exc:
            self._put(_user_error(exc))
        except BaseException as exc:  # handed to the reader, never lost in a thread
            self._put(exc)

    # ---- the caller's side --------------------------------------------------------------------------------

    def _halt(self, error: StoreError) -> None:
        self._stop.set()
        self._con.interrupt()
        raise error

    def _check_spill(self) -> None:
        now = time.monotonic()
        if self._spill_limit is None or now - self._spill_checked < SPILL_CHECK_SECONDS:
            return
        self._spill_checked = now
        # A spill limit is set only with a temp_directory.
        if spilled_bytes(Path(self._sandbox.temp_directory)) > self._spill_limit:  # type: ignore[arg-type]
            self._halt(StoreError(f"the query spilled more than {self._sandbox.max_temp_size} to disk and was "
                                  "stopped (UNIROUTE_SQL_TEMP_LIMIT raises the cap; or sort or join fewer rows)"))

    def _next(self) -> object:
        while True:
            self._check_spill()
            if self._cancel.is_set():
                self._halt(SqlInterrupted("interrupted (Ctrl-C): the query was stopped"))
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                self._halt(SqlTimeout(f"the query ran longer than {self._sandbox.timeout_seconds:g} s and was "
                                      "stopped (give --timeout SECONDS for more)"))
            with contextlib.suppress(queue.Empty):
                return self._queue.get(timeout=min(POLL_SECONDS, remaining))

    def __iter__(self) -> Iterator[pd.DataFrame]:
        while (item := self._next()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stop the worker, close the connection, then run on_close (e.g. remove the temp folder)."""
        self._stop.set()
        if self._worker.is_alive():
            self._con.interrupt()
            self._worker.join(timeout=10)
        try:
            self._con.close()
        finally:
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> StreamedQuery:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
