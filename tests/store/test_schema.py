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
