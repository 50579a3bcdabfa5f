"""Connections to the store file: open (read-write applies the schema), close, and transactions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from uniroute.errors import UnirouteError
from uniroute.store.embeddings import export_legacy, expose_view
from uniroute.store.schema import IncompatibleStore, apply_schema

# What operations receive from their caller's session: other packages name this type and never import duckdb.
Connection = duckdb.DuckDBPyConnection


class StoreError(UnirouteError, RuntimeError):
    """A store operation that cannot proceed; the message says what and where."""


class DamagedStore(StoreError):
    """The store file is not a DuckDB database, or is cut short: no wait makes it readable."""


# DuckDB's words for a file that is not a database or is truncated (as opposed to one another process holds).
_DAMAGE = ("not a valid DuckDB database file", "Could not read enough bytes", "database file is corrupt",
           "Corrupt database file")


def damaged(db_path: Path, exc: duckdb.Error) -> DamagedStore | None:
    """The one-line error for a store file DuckDB cannot read as a database, or None for any other failure."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if not any(words in str(exc) for words in _DAMAGE):
        return None
    return DamagedStore(f"{db_path} is not a readable DuckDB store ({first}): restore it from a backup of "
                        f"$UNIROUTE_HOME (docs/operate.md, 'Back up, restore, move'), or move it aside "
                        f"(mv {db_path} {db_path}.damaged) to start an empty store")



def connect(db_path: Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the store; read-write connections create the file and apply the schema."""
    db_path = Path(db_path)
    if read_only:
        if not db_path.exists():
            raise StoreError(f"no store at {db_path}: run `uniroute ingest` (or `make run`) first")
        try:
            con = duckdb.connect(str(db_path), read_only=True)
        except duckdb.Error as exc:
            if (bad := damaged(db_path, exc)) is not None:
                raise bad from exc
            if not isinstance(exc, duckdb.IOException):
                raise
            raise StoreError(
                f"the store {db_path} is locked by a running pipeline process; query the published "
                f"snapshot instead, or retry when it finishes ({exc})"
            ) from exc
        return _with_view(con)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(str(db_path))
    except duckdb.Error as exc:
        if (bad := damaged(db_path, exc)) is not None:
            raise bad from exc
        if not isinstance(exc, duckdb.IOException):
            raise
        raise StoreError(
            f"cannot open the store {db_path} for writing: another process holds it (DuckDB allows one "
            f"writer; wait for the running pipeline step to finish) ({exc})"
        ) from exc
    try:
        apply_schema(con)
        # After the schema's transaction: a store just brought to version 5 moves its vectors to the dataset.
        export_legacy(con)
    except IncompatibleStore as exc:
        con.close()
        raise StoreError(f"{db_path}: {exc}") from exc
    except BaseException:
        con.close()  # an open connection would keep the file from being opened again by this process
        raise
    return _with_view(con)


def _with_view(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """The connection with its `embeddings` view over the Parquet dataset (store.embeddings)."""
    try:
        expose_view(con)
    except BaseException:
        con.close()
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

