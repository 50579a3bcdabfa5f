"""The store: the only door to DuckDB.

Owns the connection and its sessions (one connection, one transaction per operation), the numbered schema in
`sql/schema/`, the named statements in `sql/queries/` and the sandbox that runs a user's SQL. Every other
package reaches DuckDB through here and never formats a value into SQL. It imports no other uniroute stage.
"""

from uniroute.store.connection import StoreError, connect, opened, transaction
from uniroute.store.queries import execute, query, query_arrow, query_text, registered, write_frame
from uniroute.store.sandbox import READ_ONLY_STATEMENTS, read_only_query
from uniroute.store.schema import SQL_DIR, apply_schema, schema_files

__all__ = [
    "READ_ONLY_STATEMENTS",
    "SQL_DIR",
    "StoreError",
    "apply_schema",
    "connect",
    "execute",
    "opened",
    "query",
    "query_arrow",
    "query_text",
    "read_only_query",
    "registered",
    "schema_files",
    "transaction",
    "write_frame",
]
