"""The store's shape: sql/schema/ (current, idempotent DDL) brought to every read-write connection, sql/migrations/
(one file per version step) applied once to a store written at an older version, and the version recorded.

sql/schema/NNN_*.sql declares every relation in its current shape (`create table if not exists`, `create or
replace view`), so a new store is created by them alone. A change to an existing table's shape also adds
sql/migrations/NNN_*.sql, numbered by the schema version it brings a store to; the newest number is the version
this code creates (schema_version()). A store that recorded an older version (or none: version 0, written before
versions were recorded) gets the missing migrations, then the schema files, and a `schema_version` row per
migration, all in one transaction, so a kill leaves it at its old version. A store at a newer version than this
code knows is refused.

Running the schema files costs a writer connection about 0.3 s and, on a store already in their shape, changes
nothing. So the pair they leave (a hash of the files and DuckDB's version, a hash of the store's tables and views
after them) is recorded in `schema_applied` in their transaction, and a connection at the store's version that
finds its own pair skips them. Whatever could make them change something breaks the match: an edited or added
schema file, another DuckDB, a view or table replaced or dropped behind the record (docs/decisions/0411).
"""

from __future__ import annotations

import contextlib
import hashlib
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from uniroute.errors import UnirouteError

SQL_DIR = Path(__file__).resolve().parent.parent.parent / "sql"
CREATED = "created"  # schema_version.applied of a store created at its version (not upgraded to it)


class IncompatibleStore(UnirouteError, RuntimeError):
    """A store file written by an earlier uniroute whose tables this version cannot read."""


def schema_files() -> list[Path]:
    """The numbered DDL files, in the order they are applied."""
    return sorted((SQL_DIR / "schema").glob("[0-9][0-9][0-9]_*.sql"))


def migration_files() -> list[Path]:
    """The numbered migration files, oldest first; each file's number is the version it brings a store to."""
    return sorted((SQL_DIR / "migrations").glob("[0-9][0-9][0-9]_*.sql"))


def _number(path: Path) -> int:
    return int(path.name[:3])


def schema_version() -> int:
    """The schema version this code creates and upgrades stores to: the newest migration's number."""
    return max((_number(p) for p in migration_files()), default=0)


def _catalog(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """The store's own tables and views: (kind, name, DuckDB's SQL for it), in a fixed order."""
    return con.execute(_query_text("schema_catalog")).fetchall()


def _tables(catalog: list[tuple[str, str, str]]) -> set[str]:
    return {name for kind, name, _ in catalog if kind == "table"}


def _version_in(con: duckdb.DuckDBPyConnection, catalog: list[tuple[str, str, str]]) -> int | None:
    tables = _tables(catalog)
    if "schema_version" in tables:
        # An aggregate: always one row.
        return int(con.execute(_query_text("schema_version_current")).fetchall()[0][0])
    return 0 if tables else None


def recorded_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The store's schema version: None for a new, empty store; 0 for one written before versions were recorded."""
    return _version_in(con, _catalog(con))


def files_hash() -> str:
    """A hash of what the schema files say (their names and text) and of the DuckDB that runs them."""
    digest = hashlib.sha256(f"duckdb {duckdb.__version__}\n".encode())
    for file in schema_files():
        text = file.read_bytes()
        digest.update(f"{file.name}\n{len(text)}\n".encode() + text)
    return digest.hexdigest()


def catalog_hash(catalog: list[tuple[str, str, str]]) -> str:
    """A hash of the store's tables and views as DuckDB states them (_catalog)."""
    return hashlib.sha256(repr(catalog).encode()).hexdigest()


def _in_shape(con: duckdb.DuckDBPyConnection, files: str, catalog: list[tuple[str, str, str]]) -> bool:
    """Whether these schema files are recorded to have left the catalog exactly as it is now (schema_applied)."""
    if "schema_applied" not in _tables(catalog):  # a store no connection has recorded a shape in yet
        return False
    return bool(con.execute(_query_text("schema_applied_known"), {"files": files, "catalog": catalog_hash(catalog)}
                            ).fetchall()[0][0])


def _record_applied(con: duckdb.DuckDBPyConnection, files: str, now: datetime) -> None:
    """Record the pair the schema files just left (inside their transaction: a kill leaves no pair, so they rerun)."""
    con.execute(_query_text("schema_applied_record"),
                {"files": files, "catalog": catalog_hash(_catalog(con)), "at": now})


def _check_not_newer(found: int | None) -> None:
    """Refuse a store written by a newer uniroute, whose shape this code does not know."""
    if found is not None and found > schema_version():
        raise IncompatibleStore(
            f"this store is at schema version {found}, written by a newer uniroute; this one knows versions up to "
            f"{schema_version()}: upgrade uniroute to open it"
        )


def _check_no_pickles(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse a store whose router versions are pickles (written before routers were stored as npz). A store in
    the recorded shape of this code's files passed this check when that shape was recorded."""
    old = con.execute(
        "select count(*) from information_schema.columns where table_name = 'routers' and column_name = 'artifact'"
    ).fetchall()[0][0]
    if old:
        raise IncompatibleStore(
            "this store was written by an earlier uniroute that kept routers as pickles, which this version "
            "no longer loads; start a new UNIROUTE_HOME and ingest the logs again"
        )


def _query_text(name: str) -> str:
    # store.queries imports this module (SQL_DIR), so its statements are read here directly.
    return (SQL_DIR / "queries" / f"{name}.sql").read_text()


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Bring the store to the current schema: pending migrations once, then every schema file (each idempotent),
    recording the version reached; on a store already at it, only the idempotent schema files run, unless they
    are recorded to have left its catalog as it is (then nothing runs)."""
    catalog = _catalog(con)
    found = _version_in(con, catalog)
    _check_not_newer(found)
    target = schema_version()
    files, now = files_hash(), datetime.now(UTC).replace(tzinfo=None)
    if found == target and _in_shape(con, files, catalog):
        return
    _check_no_pickles(con)
    if found == target:
        con.execute("begin transaction")
        try:
            for idempotent in schema_files():
                con.execute(idempotent.read_text())
            _record_applied(con, files, now)
            con.execute("commit")
        except BaseException:
            with contextlib.suppress(duckdb.Error):
                con.execute("rollback")
            raise
        return
    # Migrations run before the schema files: the views those re-create read the columns the migrations add.
    pending = [] if found is None else [p for p in migration_files() if _number(p) > found]
    reached = [(target, CREATED)] if found is None else [(_number(p), p.name) for p in pending]
    con.execute("begin transaction")
    file: Path | None = None
    try:
        for file in [*pending, *schema_files()]:
            con.execute(file.read_text())
        file = None
        _record_applied(con, files, now)
        for version, applied in reached:
            con.execute(_query_text("schema_version_record"), {"version": version, "at": now, "applied": applied})
        con.execute("commit")
    except BaseException as exc:
        with contextlib.suppress(duckdb.Error):  # keep the error that failed the upgrade, not the rollback's
            con.execute("rollback")
        if found is None or not isinstance(exc, duckdb.Error):
            raise
        where = f" in sql/{file.parent.name}/{file.name}" if file is not None else ""
        raise IncompatibleStore(
            f"upgrading the store from schema version {found} to {target} failed{where} "
            f"({str(exc).splitlines()[0]}); nothing was changed"
        ) from exc
