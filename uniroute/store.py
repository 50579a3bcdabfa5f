"""The only door to DuckDB: connect, apply the schema, run named SQL, bulk-write frames."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

log = logging.getLogger(__name__)

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"

# Statement types a user's read-only query may contain. Anything else (COPY ... TO, ATTACH, SET,
# INSERT, ...) is refused before it runs, since a read-only connection still lets COPY write files.
READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}


class StoreError(RuntimeError):
    """A store operation that cannot proceed; the message says what and where."""


def schema_files() -> list[Path]:
    """The numbered DDL files, in the order they are applied."""
    return sorted((SQL_DIR / "schema").glob("[0-9][0-9][0-9]_*.sql"))


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Apply every schema file in order; each is idempotent."""
    for path in schema_files():
        con.execute(path.read_text())


def connect(db_path: Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the store; read-write connections create the file and apply the schema."""
    db_path = Path(db_path)
    if read_only:
        if not db_path.exists():
            raise StoreError(f"no store at {db_path}: run `uniroute ingest` (or `make run`) first")
        try:
            return duckdb.connect(str(db_path), read_only=True)
        except duckdb.IOException as exc:
            raise StoreError(
                f"the store {db_path} is locked by a running pipeline process; query the published "
                f"snapshot instead, or retry when it finishes ({exc})"
            ) from exc
    db_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(str(db_path))
    except duckdb.IOException as exc:
        raise StoreError(
            f"cannot open the store {db_path} for writing: another process holds it (DuckDB allows one "
            f"writer; wait for the running pipeline step to finish) ({exc})"
        ) from exc
    apply_schema(con)
    return con


@contextmanager
def opened(db_path: Path, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection that is closed on exit."""
    con = connect(db_path, read_only=read_only)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Commit everything inside or nothing: a failure (or a killed process) leaves no trace."""
    con.execute("begin transaction")
    try:
        yield con
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")


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


def query_arrow(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> pa.Table:
    """Run a named query and return an Arrow table (no pandas conversion)."""
    # con.sql streams the result into Arrow; execute() would first materialise it as DB-API rows.
    return con.sql(query_text(name), params=params or None).to_arrow_table()


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


def read_only_query(db_path: Path, sql: str) -> pd.DataFrame:
    """Run a user's SELECT on a read-only connection; anything that could write is refused."""
    with opened(db_path, read_only=True) as con:
        try:
            statements = con.extract_statements(sql)
        except duckdb.Error as exc:
            raise StoreError(f"cannot parse SQL: {exc}") from exc
        if not statements:
            raise StoreError("no SQL statement given")
        for statement in statements:
            kind = statement.type.name
            if kind not in READ_ONLY_STATEMENTS:
                raise StoreError(
                    f"refused: `uniroute sql` is read-only and this is a {kind} statement: "
                    f"{statement.query.strip()[:80]!r}"
                )
        result = None
        for statement in statements:
            try:
                result = con.execute(statement.query).df()
            except duckdb.Error as exc:
                raise StoreError(f"query failed: {exc}") from exc
        return result


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
