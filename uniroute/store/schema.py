"""The numbered, idempotent DDL files of sql/schema/, applied in order on every read-write connection."""

from __future__ import annotations

from pathlib import Path

import duckdb

SQL_DIR = Path(__file__).resolve().parent.parent.parent / "sql"


def schema_files() -> list[Path]:
    """The numbered DDL files, in the order they are applied."""
    return sorted((SQL_DIR / "schema").glob("[0-9][0-9][0-9]_*.sql"))


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Apply every schema file in order; each is idempotent."""
    for path in schema_files():
        con.execute(path.read_text())
