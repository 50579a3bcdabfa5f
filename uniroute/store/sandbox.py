"""A user's SQL: read-only, checked statement by statement before it runs."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

from uniroute.store.connection import StoreError, opened

# Statement types a user's read-only query may contain. Anything else (COPY ... TO, ATTACH, SET,
# INSERT, ...) is refused before it runs, since a read-only connection still lets COPY write files.
READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}


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
