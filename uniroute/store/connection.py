"""Connections to the store file: open (read-write applies the schema), close, and transactions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from uniroute.errors import UnirouteError
from uniroute.store.schema import IncompatibleStore, apply_schema

# What operations receive from their caller's session: other packages name this type and never import duckdb.
Connection = duckdb.DuckDBPyConnection


class StoreError(UnirouteError, RuntimeError):
    """A store operation that cannot proceed; the message says what and where."""



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
    try:
        apply_schema(con)
    except IncompatibleStore as exc:
        con.close()
        raise StoreError(f"{db_path}: {exc}") from exc
    except BaseException:
        con.close()  # an open connection would keep the file from being opened again by this process
        raise
    return con


@contextmanager
def opened(db_path: Path, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection that is closed on exit."""
    con = connect(db_path, read_only=read_only)
    try:
        yield con
    finally:
        con.close()

