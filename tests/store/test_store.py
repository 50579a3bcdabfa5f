import duckdb
import pandas as pd
import pytest

from uniroute import store


def test_schema_is_idempotent_and_creates_tables(db_path):
    with store.opened(db_path) as con:
        store.apply_schema(con)  # a second application changes nothing
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
    assert {"prompts", "models", "results", "ingested_files", "quarantine"} <= tables


def test_transaction_rolls_back_on_error(db_path):
    with store.opened(db_path) as con:
        with pytest.raises(RuntimeError), store.transaction(con):
            con.execute("insert into models values ('m', 1.0, 'active', now())")
            raise RuntimeError("boom")
        assert con.execute("select count(*) from models").fetchone()[0] == 0


def test_write_frame_matches_columns_by_name(db_path):
    frame = pd.DataFrame({"status": ["active"], "model": ["a"], "first_seen": [pd.Timestamp("2026-01-01")]})
    with store.opened(db_path) as con:
        assert store.write_frame(con, "models", frame) == 1
        assert con.execute("select model, default_cost from models").fetchall() == [("a", None)]


def test_read_only_query_refuses_writes(db_path):
    with store.opened(db_path):
        pass
    assert store.read_only_query(db_path, "select 42 as x").x.tolist() == [42]
    for sql in ("delete from models", "insert into models values ('m', 1, 'active', now())",
                "copy (select 1) to 'x.csv'", "create table t as select 1", "attach 'x.db'"):
        with pytest.raises(store.StoreError, match="refused"):
            store.read_only_query(db_path, sql)


def test_read_only_without_store_is_a_clear_error(tmp_path):
    with pytest.raises(store.StoreError, match="no store"):
        store.connect(tmp_path / "missing.duckdb", read_only=True)


def test_unknown_named_query_lists_known_ones():
    with pytest.raises(store.StoreError, match="no named query"):
        store.query_text("does_not_exist")


def test_named_query_binds_parameters(db_path, tmp_path, monkeypatch):
    with store.opened(db_path) as con:
        con.execute("insert into models values ('a', 2.0, 'active', now()), ('b', null, 'retired', now())")
        rows = con.execute("select model from models where status = $status", {"status": "active"}).fetchall()
    assert rows == [("a",)]
    assert isinstance(duckdb.__version__, str)
