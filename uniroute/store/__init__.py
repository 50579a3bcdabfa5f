"""The store: the only door to DuckDB.

Owns the connection and its sessions (`session`: the writer lock, one connection and one transaction per
operation, recorded in the operations log), the store's shape (`schema`: the numbered DDL of `sql/schema/`, each
relation once in its current shape, applied by a read-write connection unless recorded as applied to the catalog
as it is (`schema_applied`); the version the store reached in `schema_version`; the files of `sql/migrations/`
applied once, in one transaction, to a store written at an older version), the named statements in
`sql/queries/` and the sandbox that runs a user's SQL. Every other package reaches DuckDB through here and never
formats a value into SQL. It imports no other uniroute stage.
"""

from uniroute.store.connection import Connection, DamagedStore, StoreError, connect, opened
from uniroute.store.lock import Holder, ReadOnlyHome, StoreBusy, current_holder
from uniroute.store.queries import (
    copied,
    execute,
    memory_limited,
    query,
    query_arrow,
    query_batches,
    query_row,
    query_text,
    registered,
    write_frame,
)
from uniroute.store.sandbox import (
    READ_ONLY_STATEMENTS,
    Sandbox,
    SqlRefused,
    SqlTimeout,
    StoreLocked,
    open_read_only,
    open_store_sandbox,
    read_only_query,
    sandbox_over,
    sandboxed_over,
)
from uniroute.store.schema import SQL_DIR, apply_schema, schema_files
from uniroute.store.session import Session, inspection, session
from uniroute.store.sql_stream import SqlInterrupted, StreamedQuery
from uniroute.store.sql_temp import private_temp_dir, remove_temp_dir, stale_temp_dirs
from uniroute.store.store_spill import remove_spill_files, spill_dir, spilled_bytes, stale_spill_files

__all__ = [
    "Connection",
    "DamagedStore",
    "READ_ONLY_STATEMENTS",
    "SQL_DIR",
    "Holder",
    "Sandbox",
    "Session",
    "SqlRefused",
    "SqlTimeout",
    "ReadOnlyHome",
    "StoreBusy",
    "SqlInterrupted",
    "StoreError",
    "StreamedQuery",
    "StoreLocked",
    "apply_schema",
    "connect",
    "current_holder",
    "execute",
    "copied",
    "memory_limited",
    "open_read_only",
    "opened",
    "query",
    "query_arrow",
    "query_batches",
    "query_row",
    "query_text",
    "open_store_sandbox",
    "private_temp_dir",
    "read_only_query",
    "sandbox_over",
    "stale_temp_dirs",
    "stale_spill_files",
    "spill_dir",
    "spilled_bytes",
    "remove_spill_files",
    "remove_temp_dir",
    "registered",
    "sandboxed_over",
    "schema_files",
    "session",
    "inspection",
    "write_frame",
]
