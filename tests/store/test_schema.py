"""Schema versions and upgrades (uniroute/store/schema.py): a new store and one written by the previous release's
schema files (tests/store/schema_v0/, copied before versions were recorded) end in the same shape."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from uniroute import store
from uniroute.store import schema

V0_FILES = sorted((Path(__file__).parent / "schema_v0").glob("*.sql"))
# The previous release patched psi by alter statements; a store from before those patches lacks their columns.
PATCHES = ("007_psi_routing_loss.sql", "008_model_cluster_errors.sql")


def _old_store(path: Path, files: list[Path]) -> Path:
    """A store as the previous release left it: its schema files applied in order, and a Psi row written before
    the build stored routing_loss, the interval and the sparse flag."""
    con = duckdb.connect(str(path))
    try:
        for file in files:
            con.execute(file.read_text())
        con.execute("insert into psi (router_id, model, cluster, loss, n) values ('R', 'a', 0, 0.25, 3), "
                    "('R', 'a', 1, 0.5, 12)")
    finally:
        con.close()
    return path


def _shape(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    """Every relation's columns, types and nullability, and every constraint, as the catalog says them."""
    return {
        "relations": con.execute(
            "select table_name, table_type from information_schema.tables "
            "where table_schema = 'main' order by table_name").fetchall(),
        "columns": con.execute(
            "select table_name, ordinal_position, column_name, data_type, is_nullable, column_default "
            "from information_schema.columns where table_schema = 'main' order by table_name, ordinal_position"
        ).fetchall(),
        "constraints": con.execute(
            "select table_name, constraint_type, constraint_text from duckdb_constraints() "
            "where schema_name = 'main' order by all").fetchall(),
    }


def _state(path: Path) -> tuple[dict[str, list[tuple]], list[tuple], list[tuple]]:
    """(shape, schema_version rows, psi rows) of the store after a read-write connection."""
    with store.opened(path) as con:
        versions = con.execute("select version, applied from schema_version order by version").fetchall()
        psi = con.execute("select * from psi order by all").fetchall()
        return _shape(con), versions, psi


def test_schema_files_and_migrations_have_unique_numbers_and_no_patches():
    for files in (schema.schema_files(), schema.migration_files()):
        numbers = [f.name[:3] for f in files]
        assert len(numbers) == len(set(numbers)), [f.name for f in files]
    for file in schema.schema_files():
        assert "alter table" not in file.read_text().lower(), f"{file.name}: shape changes go to sql/migrations/"
    views = [line.split()[4] for f in schema.schema_files() for line in f.read_text().splitlines()
             if line.lower().startswith("create or replace view")]
    assert len(views) == len(set(views)), sorted(v for v in views if views.count(v) > 1)
    assert schema.schema_version() == int(schema.migration_files()[-1].name[:3])


def test_a_new_store_is_created_at_the_newest_version(db_path):
    shape, versions, _ = _state(db_path)
    assert versions == [(schema.schema_version(), schema.CREATED)]
    assert ("schema_version", "BASE TABLE") in shape["relations"]


@pytest.mark.parametrize("files", [V0_FILES, [f for f in V0_FILES if f.name not in PATCHES]],
                         ids=["previous-release", "before-psi-patches"])
def test_an_old_store_upgrades_to_the_shape_of_a_new_one(tmp_path, files):
    fresh, _, _ = _state(tmp_path / "new.duckdb")
    old = _old_store(tmp_path / "old.duckdb", files)
    with duckdb.connect(str(old)) as con:
        assert schema.recorded_version(con) == 0
    upgraded, versions, psi = _state(old)
    assert upgraded == fresh
    assert versions == [(int(f.name[:3]), f.name) for f in schema.migration_files()]
    # Old rows hold what the views used to compute for them: routing by the measured cell, sparse below 10.
    assert psi == [("R", "a", 0, 0.25, 3, 0.25, None, None, True), ("R", "a", 1, 0.5, 12, 0.5, None, None, False)]


def test_applying_twice_changes_nothing(tmp_path):
    old = _old_store(tmp_path / "old.duckdb", V0_FILES)
    first = _state(old)
    with store.opened(old) as con:
        store.apply_schema(con)
    assert _state(old) == first
    fresh = tmp_path / "new.duckdb"
    assert _state(fresh) == _state(fresh)


def test_a_failed_upgrade_leaves_the_store_at_its_old_version(tmp_path, monkeypatch):
    old = _old_store(tmp_path / "old.duckdb", V0_FILES)
    target = schema.schema_version() + 1
    broken = tmp_path / "migrations" / f"{target:03d}_broken.sql"
    broken.parent.mkdir()
    broken.write_text("alter table psi add column half_done double;\nselect * from no_such_table;\n")
    monkeypatch.setattr(schema, "migration_files", lambda: [*sorted((schema.SQL_DIR / "migrations").glob("*.sql")),
                                                            broken])
    with pytest.raises(store.StoreError, match=rf"from schema version 0 to {target} failed in "
                       rf"sql/migrations/{broken.name} \(Catalog Error.*no_such_table.*nothing was changed"):
        store.connect(old)
    with duckdb.connect(str(old), read_only=True) as con:
        assert schema.recorded_version(con) == 0
        columns = [r[0] for r in con.execute("select column_name from information_schema.columns "
                                             "where table_name = 'psi'").fetchall()]
        assert "half_done" not in columns
        assert con.execute("select count(*) from psi where sparse is null").fetchone() == (2,)


def test_a_store_from_a_newer_uniroute_is_refused(db_path):
    with store.opened(db_path) as con:
        con.execute("insert into schema_version values ($v, now(), 'created')", {"v": schema.schema_version() + 1})
    with pytest.raises(store.StoreError, match="newer uniroute"):
        store.connect(db_path)


class _Counting:
    """A connection that keeps the statements run through it (apply_schema takes any connection)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.statements = con, []

    def execute(self, statement: str, params=None):
        self.statements.append(statement)
        return self.con.execute(statement, params)


def _ddl_run(path: Path) -> list[str]:
    """The schema files' statements a read-write connection ran on the store at path."""
    con = duckdb.connect(str(path))
    try:
        counting = _Counting(con)
        schema.apply_schema(counting)  # type: ignore[arg-type]
    finally:
        con.close()
    texts = {f.read_text() for f in schema.schema_files()}
    return [s for s in counting.statements if s in texts]


def _views(path: Path) -> dict[str, str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return dict(con.execute("select view_name, sql from duckdb_views() where not internal and not temporary")
                    .fetchall())


def test_a_store_in_the_shape_of_the_schema_files_does_not_run_them_again(db_path):
    store.connect(db_path).close()
    assert _ddl_run(db_path) == []
    with duckdb.connect(str(db_path), read_only=True) as con:
        assert con.execute("select count(*) from schema_applied").fetchone() == (1,)


@pytest.mark.parametrize("change", [
    "create or replace view current_publication as select 1 as version",  # another uniroute's view
    "drop view current_traffic_share",
    "drop table pending_outcomes",
])
def test_a_catalog_changed_behind_the_record_gets_the_schema_files_again(db_path, change):
    store.connect(db_path).close()
    shaped = _views(db_path)
    with duckdb.connect(str(db_path)) as con:
        con.execute(change)
    assert len(_ddl_run(db_path)) == len(schema.schema_files())
    assert _views(db_path) == shaped
    assert _ddl_run(db_path) == []  # and the shape they left is recorded


def test_an_edited_schema_file_runs_on_the_next_connection(db_path, tmp_path, monkeypatch):
    store.connect(db_path).close()
    extra = tmp_path / "999_extra.sql"
    extra.write_text("create or replace view extra_view as select 1 as x;\n")
    files = [*schema.schema_files(), extra]
    monkeypatch.setattr(schema, "schema_files", lambda: files)
    store.connect(db_path).close()
    assert "extra_view" in _views(db_path)
    extra.write_text("create or replace view extra_view as select 2 as x;\n")  # same names, new text
    store.connect(db_path).close()
    with duckdb.connect(str(db_path), read_only=True) as con:
        assert con.execute("select x from extra_view").fetchone() == (2,)
    assert _ddl_run(db_path) == []


def test_a_failed_schema_file_records_nothing_and_changes_nothing(db_path, tmp_path, monkeypatch):
    store.connect(db_path).close()
    shaped = _views(db_path)
    broken = tmp_path / "999_broken.sql"
    broken.write_text("create or replace view current_publication as select 1 as version;\n"
                      "select * from no_such_table;\n")
    monkeypatch.setattr(schema, "schema_files", lambda: [*sorted((schema.SQL_DIR / "schema").glob("*.sql")), broken])
    with pytest.raises(duckdb.CatalogException, match="no_such_table"):
        store.connect(db_path)
    assert _views(db_path) == shaped
    monkeypatch.undo()
    assert _ddl_run(db_path) == []  # the pair recorded before still holds


def test_an_upgrade_runs_its_migration_on_a_store_recorded_in_shape(tmp_path, monkeypatch):
    """The record skips the schema files only at the store's own version: a new migration always runs."""
    old = _old_store(tmp_path / "old.duckdb", V0_FILES)
    store.connect(old).close()  # upgraded from version 0, its shape recorded
    # ... before its legacy vectors moved to Parquet (after the upgrade's transaction), dropping their table: the
    # next connection runs the files once more and records the shape without it.
    assert len(_ddl_run(old)) == len(schema.schema_files())
    assert _ddl_run(old) == []
    target = schema.schema_version() + 1
    migration = tmp_path / "migrations" / f"{target:03d}_extra_column.sql"
    migration.parent.mkdir()
    migration.write_text("alter table psi add column extra double;\n")
    monkeypatch.setattr(schema, "migration_files", lambda: [*sorted((schema.SQL_DIR / "migrations").glob("*.sql")),
                                                            migration])
    store.connect(old).close()
    with duckdb.connect(str(old), read_only=True) as con:
        assert schema.recorded_version(con) == target
        assert "extra" in [r[0] for r in con.execute("select column_name from information_schema.columns "
                                                     "where table_name = 'psi'").fetchall()]
    assert _ddl_run(old) == []  # the new shape (psi's new column) recorded too
