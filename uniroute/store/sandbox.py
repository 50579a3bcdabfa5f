"""A user's SQL, sandboxed: read-only, no file or network access, bounded memory and time.

Every connection that runs user SQL is locked down before the user's text reaches it: external access off
(no file read or written, no ATTACH, no INSTALL), extension auto-install and auto-load off, a memory limit,
and `lock_configuration` so no statement can loosen any of it. On top of that, each statement is parsed and
only SELECT (and EXPLAIN of a SELECT, checked on what it wraps) may run. A wall-clock timer interrupts a
query that runs too long. Refusals raise SqlRefused, which the CLI turns into one line and exit code 2.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from uniroute.store.connection import StoreError, damaged
from uniroute.store.embeddings import allowed_directory, expose_view

# Statement types a user's query may contain; EXPLAIN is allowed only around an allowed statement.
READ_ONLY_STATEMENTS = {"SELECT"}
# Table functions a user's SELECT may call, decided on DuckDB's own parse of it (json_serialize_sql), however the
# name is quoted, qualified, cased or commented: none reads a file or runs SQL given as text. With external
# access off DuckDB still lets read_blob and read_text open the database's own file (its raw pages, deleted rows
# included), and query()/query_table() would run text no check has seen; whatever is not listed is refused.
ALLOWED_TABLE_FUNCTIONS = frozenset({
    "range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree", "pg_timezone_names",
    "icu_calendar_names", "pragma_table_info", "pragma_show", "pragma_version", "pragma_platform",
    "pragma_collations", "duckdb_tables", "duckdb_columns", "duckdb_views", "duckdb_schemas", "duckdb_functions",
    "duckdb_types", "duckdb_constraints", "duckdb_indexes", "duckdb_keywords", "duckdb_sequences",
    "duckdb_dependencies",
})
FILE_READERS = ("read_", "parquet_", "glob", "sniff_csv", "seq_scan")  # named as such in a refusal
# Tables user SQL may not read: the decision records keep each routed prompt's embedding and its unkeyed sha256,
# which would let a guessed prompt be confirmed; routing_decisions is the same rows without them.
PRIVATE_TABLES = {"decisions": "routing_decisions"}
DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MEMORY_LIMIT = "1GB"
DEFAULT_MAX_TEMP_SIZE = "2GB"
SANDBOX_THREADS = 2
LOCKDOWN = (
    "SET enable_external_access = false",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
)
_EXPLAIN = re.compile(
    r"^\s*(?:(?:/\*.*?\*/|--[^\n]*(?:\n|$))\s*)*explain\s+(?:analy[sz]e\s+)?(?:\([^)]*\)\s*)?(?P<inner>.*)$",
    re.IGNORECASE | re.DOTALL,
)


class SqlRefused(StoreError):
    """User SQL that is not allowed to run (it would write, read files or the network, or change settings)."""


class SqlTimeout(StoreError):
    """User SQL interrupted after its time limit."""


class StoreLocked(StoreError):
    """The store file is held by a writer process, so it cannot be opened for reading now."""


@dataclass(frozen=True)
class Sandbox:
    """Limits of a sandboxed connection."""

    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    # Where a query larger than memory spills, and how much it may spill. None: DuckDB's default, which for an
    # in-memory database is `.tmp` in the caller's working directory; the CLI gives a folder in the state folder.
    temp_directory: Path | None = None
    max_temp_size: str = DEFAULT_MAX_TEMP_SIZE
    # False: never spill (a home that cannot be written has no folder for it; a query larger than memory fails
    # in one line instead of writing `.tmp` wherever the caller stands).
    spill: bool = True


ConnectConfig = dict[str, str | bool | int | float | list[str]]  # what duckdb.connect takes as config


def _spill_config(sandbox: Sandbox | None) -> ConnectConfig:
    """The spill folder and its cap, set when connecting: DuckDB refuses them once external access is off."""
    if sandbox is None:
        return {}
    if not sandbox.spill:
        return {"temp_directory": ""}  # DuckDB's "no temp directory": nothing is offloaded to disk
    if sandbox.temp_directory is None:
        return {}
    return {"temp_directory": str(sandbox.temp_directory), "max_temp_directory_size": sandbox.max_temp_size}


def _connect_config(sandbox: Sandbox | None) -> ConnectConfig:
    """What a sandboxed connection to the store is opened with: access off, and its spill folder."""
    return {
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        **_spill_config(sandbox),
    }


def lock_down(con: duckdb.DuckDBPyConnection, sandbox: Sandbox) -> duckdb.DuckDBPyConnection:
    """Switch off file, network and extension access, cap memory and threads, then freeze the configuration."""
    for statement in LOCKDOWN:
        con.execute(statement)
    con.execute("SET memory_limit = $limit", {"limit": sandbox.memory_limit})
    con.execute(f"SET threads = {int(SANDBOX_THREADS)}")
    con.execute("SET lock_configuration = true")
    return con


def open_read_only(db_path: Path, sandbox: Sandbox | None = None, access_off: bool = True) -> duckdb.DuckDBPyConnection:
    """The store opened read-only with file, network and extension access off; StoreLocked while a writer
    process holds the file (DuckDB lets no other process open it then). access_off=False: the caller turns it off
    (lock_down) after what must precede it (the folders it may still read)."""
    db_path = Path(db_path)
    if not db_path.exists():
        raise StoreError(f"no store at {db_path}: run `uniroute ingest` (or `make run`) first")
    try:
        config = _connect_config(sandbox) if access_off else _spill_config(sandbox)
        return duckdb.connect(str(db_path), read_only=True, config=config)
    except duckdb.Error as exc:
        if (bad := damaged(db_path, exc)) is not None:
            raise bad from exc
        if not isinstance(exc, duckdb.IOException):
            raise
        raise StoreLocked(f"the store {db_path} is held by a writer ({str(exc).splitlines()[0]})") from exc


def open_store_sandbox(db_path: Path, sandbox: Sandbox) -> duckdb.DuckDBPyConnection:
    """The store opened read-only and locked down, its `embeddings` view over the Parquet dataset readable (that
    folder alone: DuckDB's allowed_directories, set before access goes off); StoreLocked if a writer holds it."""
    con = open_read_only(db_path, sandbox, access_off=False)
    try:
        if (folder := allowed_directory(db_path)) is not None:
            con.execute("SET allowed_directories = $dirs", {"dirs": [folder]})
        expose_view(con)
        return lock_down(con, sandbox)
    except BaseException:
        con.close()
        raise


def checked_statements(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    """The statements of sql, each checked to be a SELECT (or an EXPLAIN of one); SqlRefused otherwise."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise SqlRefused(f"cannot parse the SQL: {str(exc).splitlines()[0]}") from exc
    if not statements:
        raise SqlRefused("no SQL statement given")
    out = []
    for statement in statements:
        text = statement.query.strip()
        kind = statement.type.name
        select = text
        if kind == "EXPLAIN":
            match = _EXPLAIN.match(text)
            inner = con.extract_statements(match.group("inner")) if match and match.group("inner").strip() else []
            if len(inner) != 1 or inner[0].type.name not in READ_ONLY_STATEMENTS:
                wrapped = inner[0].type.name if len(inner) == 1 else "something that is not one SELECT"
                raise SqlRefused(f"refused: EXPLAIN wraps a {wrapped} statement; `uniroute sql` runs SELECT only: "
                                 f"{text[:80]!r}")
            select = inner[0].query
        elif kind not in READ_ONLY_STATEMENTS:
            raise SqlRefused(f"refused: `uniroute sql` is read-only and this is a {kind} statement: {text[:80]!r}")
        checked_references(con, select)
        out.append(text)
    return out


def checked_references(con: duckdb.DuckDBPyConnection, select: str) -> None:
    """SqlRefused when a SELECT, as DuckDB parses it, calls a table function outside ALLOWED_TABLE_FUNCTIONS or
    reads a PRIVATE_TABLES table (nothing is decided on the text: comments, quotes, case and schemas are gone)."""
    try:
        tree = json.loads(con.execute("select json_serialize_sql($sql)", {"sql": select}).fetchall()[0][0])
    except (duckdb.Error, json.JSONDecodeError, TypeError) as exc:
        raise SqlRefused(f"refused: the statement could not be checked ({str(exc).splitlines()[0]})") from exc
    if tree.get("error"):
        raise SqlRefused(f"refused: the statement could not be checked ({tree.get('error_message', 'no parse')}): "
                         f"{select.strip()[:80]!r}")
    for node in _nodes(tree):
        kind = node.get("type")
        if kind == "TABLE_FUNCTION" and isinstance(node.get("function"), dict):
            name = str(node["function"].get("function_name", "")).lower()
            if name in ALLOWED_TABLE_FUNCTIONS:
                continue
            if name.startswith(FILE_READERS):
                raise SqlRefused(f"refused: {name} reads files, which `uniroute sql` never does (the only one it "
                                 "could reach is the store's own file): query the store's tables and views instead")
            raise SqlRefused(f"refused: the table function {name} is not one `uniroute sql` runs (it may read "
                             "files or run SQL given as text): query the store's tables and views instead")
        if kind == "BASE_TABLE" and str(node.get("table_name", "")).lower() in PRIVATE_TABLES:
            table = str(node["table_name"]).lower()
            raise SqlRefused(f"refused: {table} keeps each routed prompt's embedding and hash, which `uniroute sql` "
                             f"does not read: query {PRIVATE_TABLES[table]} (the same rows without them)")


def _nodes(tree: object) -> Iterator[dict]:
    """Every JSON object in a parse tree, depth first (iterative: a deep tree must not exhaust the stack)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def run_sandboxed(con: duckdb.DuckDBPyConnection, sql: str, sandbox: Sandbox) -> pd.DataFrame:
    """Run user SQL on a locked-down connection: the last statement's rows, within the time limit."""
    statements = checked_statements(con, sql)
    timer = threading.Timer(sandbox.timeout_seconds, con.interrupt)
    timer.daemon = True
    timer.start()
    result = pd.DataFrame()
    try:
        for text in statements:
            try:
                result = con.execute(text).df()
            except duckdb.InterruptException as exc:
                raise SqlTimeout(f"the query ran longer than {sandbox.timeout_seconds:g} s and was stopped "
                                 "(give --timeout SECONDS for more)") from exc
            except duckdb.PermissionException as exc:
                raise SqlRefused(f"refused: {str(exc).splitlines()[0]}") from exc
            except duckdb.Error as exc:
                raise StoreError(f"query failed: {str(exc).splitlines()[0]}") from exc
    finally:
        timer.cancel()
    return result


def read_only_query(db_path: Path, sql: str, sandbox: Sandbox | None = None) -> pd.DataFrame:
    """Run a user's SELECT on the store, sandboxed; StoreLocked while a writer holds the store."""
    sandbox = sandbox or Sandbox()
    con = open_store_sandbox(db_path, sandbox)
    try:
        return run_sandboxed(con, sql, sandbox)
    finally:
        con.close()


def sandbox_over(tables: dict[str, object], views: dict[str, str], sandbox: Sandbox) -> duckdb.DuckDBPyConnection:
    """A locked-down in-memory database holding `tables` (Arrow or pandas) and `views` (name -> SELECT).

    Table and view names and the view definitions come from the project's own code, never from the user."""
    con = duckdb.connect(config=_spill_config(sandbox))  # access goes off in lock_down, after the tables load
    try:
        for name, table in tables.items():
            con.register(f"_src_{name}", table)
            con.execute(f'create table "{name}" as select * from "_src_{name}"')
            con.unregister(f"_src_{name}")
        for name, select in views.items():
            con.execute(f'create view "{name}" as {select}')
        return lock_down(con, sandbox)
    except BaseException:
        con.close()
        raise


def sandboxed_over(tables: dict[str, object], views: dict[str, str], sql: str, sandbox: Sandbox) -> pd.DataFrame:
    """Run user SQL on an in-memory database holding `tables` and `views` (see sandbox_over)."""
    con = sandbox_over(tables, views, sandbox)
    try:
        return run_sandboxed(con, sql, sandbox)
    finally:
        con.close()
