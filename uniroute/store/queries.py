"""Named statements (sql/queries/<name>.sql) with `$name` parameters bound, never formatted in; bulk writes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from uniroute.store.connection import StoreError
from uniroute.store.schema import SQL_DIR


def query_text(name: str) -> str:
    """The text of sql/queries/<name>.sql."""
    path = SQL_DIR / "queries" / f"{name}.sql"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in (SQL_DIR / "queries").glob("*.sql")))
        raise StoreError(f"no named query {name!r} in {path.parent} (known: {known})")
    return path.read_text()


def query(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> pd.DataFrame:
    """Run a named query with `$name` parameters bound (never formatted in) and return a frame."""
    return con.execute(query_text(name), params or None).df()


def query_row(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> tuple | None:
    """The first row of a named query as a tuple, or None: no DataFrame (a large BLOB takes 0.1 s, not 0.7 s)."""
    row = con.execute(query_text(name), params or None).fetchone()
    # DuckDB keeps a result open until it is read to its end, and refuses to register a frame on the connection
    # meanwhile: an onboarding that read the champion's embedder state then embedded a prompt failed there.
    con.complete()
    return row


def query_arrow(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> pa.Table:
    """Run a named query and return an Arrow table (no pandas conversion)."""
    # con.sql streams the result into Arrow; execute() would first materialise it as DB-API rows.
    return con.sql(query_text(name), params=params or None).to_arrow_table()


def query_batches(con: duckdb.DuckDBPyConnection, name: str, batch_rows: int, **params: Any) -> pa.RecordBatchReader:
    """Run a named query and stream its result as Arrow record batches of about batch_rows rows."""
    # For results too large to hold as one table (a build's 100M result cells would be 2.5 GB of Arrow).
    return con.sql(query_text(name), params=params or None).to_arrow_reader(batch_rows)


def execute(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> None:
    """Run a named statement that returns nothing of interest (DML)."""
    con.execute(query_text(name), params or None)


def write_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame | pa.Table) -> int:
    """Append a frame to a table, matching columns by name; returns the row count."""
    if not table.replace("_", "").isalnum():
        raise StoreError(f"not a table name: {table!r}")
    view = f"_frame_{table}"
    con.register(view, frame)
    try:
        con.execute(f"insert into {table} by name select * from {view}")
    finally:
        con.unregister(view)
    return len(frame)


@contextmanager
def registered(
    con: duckdb.DuckDBPyConnection, name: str, frame: pd.DataFrame | pa.Table
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Expose a frame to named queries as the relation `name` for the duration of the block."""
    if not name.replace("_", "").isalnum():
        raise StoreError(f"not a relation name: {name!r}")
    con.register(name, frame)
    try:
        yield con
    except BaseException:
        # Unregistering inside a failed transaction raises too; that must not hide the error that failed it.
        with contextlib.suppress(duckdb.Error):
            con.unregister(name)
        raise
    con.unregister(name)


# Memory caps of the memory_limited blocks open on each connection (by id), innermost last.
_LIMITS: dict[int, list[str]] = {}


@contextmanager
def copied(con: duckdb.DuckDBPyConnection, name: str, frame: pa.Table) -> Iterator[duckdb.DuckDBPyConnection]:
    """Expose an Arrow table to named queries as the temp table `name`, a copy, for the duration of the block.

    For a transaction that goes on after the block: inside one, DuckDB keeps an unregistered view, and the frame it
    scans, until the commit, so a file written block by block in one transaction held every block's frames (about
    7 MB a block). The copy is DuckDB's, under its memory limit and spilled beyond it; the frame is free
    once the copy is made.
    """
    if not name.replace("_", "").isalnum():
        raise StoreError(f"not a relation name: {name!r}")
    # A relation's own query does not enter the catalog, so nothing keeps the frame once it has run.
    con.from_arrow(frame).query("_frame", f"create or replace temp table {name} as select * from _frame")
    try:
        yield con
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # a failed transaction refuses the drop; keep the first error
            con.execute(f"drop table if exists {name}")
        raise
    con.execute(f"drop table if exists {name}")


@contextmanager
def memory_limited(con: duckdb.DuckDBPyConnection, limit: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """DuckDB's memory limit set to `limit` (e.g. "1GB") for the block, then back to the enclosing block's limit, or
    to DuckDB's default outside any."""
    # DuckDB's default limit is 80% of RAM and it keeps the blocks it read until near it: a build's queries over
    # 100M results held 9 GB (benchmarks/results/pipeline.json); capped, it evicts and spills instead.
    # Reset rather than restored from DuckDB: the limit reads back rounded ("18.8 GiB"), and no read-write connection
    # sets one. The enclosing caps are remembered here instead: a nested block (the embedding fill inside a build)
    # that reset to the default left the rest of the build uncapped (2 GB of driver at 200k x 100 LLMs).
    stack = _LIMITS.setdefault(id(con), [])
    stack.append(limit)
    execute(con, "set_memory_limit", limit=limit)
    try:
        yield con
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # a failed transaction refuses the SET; keep the first error
            _restore(con, stack)
        raise
    _restore(con, stack)


def _restore(con: duckdb.DuckDBPyConnection, stack: list[str]) -> None:
    stack.pop()
    if stack:
        execute(con, "set_memory_limit", limit=stack[-1])
    else:
        _LIMITS.pop(id(con), None)
        execute(con, "reset_memory_limit")
