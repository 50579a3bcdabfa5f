"""The numbered, idempotent DDL files of sql/schema/, applied in order on every read-write connection."""

from __future__ import annotations

from pathlib import Path

import duckdb

from uniroute.errors import UnirouteError

SQL_DIR = Path(__file__).resolve().parent.parent.parent / "sql"


class IncompatibleStore(UnirouteError, RuntimeError):
    """A store file written by an earlier uniroute whose tables this version cannot read."""


def schema_files() -> list[Path]:
    """The numbered DDL files, in the order they are applied."""
    return sorted((SQL_DIR / "schema").glob("[0-9][0-9][0-9]_*.sql"))


def _check_compatible(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse a store whose router versions are pickles (written before routers were stored as npz)."""
    old = con.execute(
        "select count(*) from information_schema.columns where table_name = 'routers' and column_name = 'artifact'"
    ).fetchone()[0]
    if old:
        raise IncompatibleStore(
            "this store was written by an earlier uniroute that kept routers as pickles, which this version "
            "no longer loads; start a new UNIROUTE_HOME and ingest the logs again"
        )


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Apply every schema file in order; each is idempotent."""
    _check_compatible(con)
    for path in schema_files():
        con.execute(path.read_text())
