"""The sandbox's own rules, checked directly: its documented defaults, the spill settings only when a folder is
given, the statement checks' refusals and messages. Added where the mutation run (make mutation) found them
untested by the end-to-end SQL tests."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from uniroute import store
from uniroute.store.connection import DamagedStore, StoreError
from uniroute.store.embeddings import root_of, write_partition
from uniroute.store.sandbox import (
    Sandbox,
    SqlRefused,
    SqlTimeout,
    StoreLocked,
    _connect_config,
    _spill_config,
    checked_statements,
    lock_down,
    open_read_only,
    open_store_sandbox,
    read_only_query,
    run_sandboxed,
    sandbox_over,
    sandboxed_over,
)

ACCESS_OFF = {"enable_external_access": False, "autoinstall_known_extensions": False,
              "autoload_known_extensions": False}


def test_the_defaults_are_the_documented_ones():
    # docs/operate.md: --timeout defaults to 30 s, UNIROUTE_SQL_MEMORY_LIMIT 1GB, UNIROUTE_SQL_TEMP_LIMIT 2GB.
    assert Sandbox() == Sandbox(timeout_seconds=30.0, memory_limit="1GB", temp_directory=None, max_temp_size="2GB",
                                spill=True)


def test_spill_settings_are_given_only_with_a_folder(tmp_path: Path):
    assert _spill_config(None) == {} and _spill_config(Sandbox()) == {}
    assert _spill_config(Sandbox(temp_directory=tmp_path, spill=False)) == {"temp_directory": ""}  # never spill
    assert _spill_config(Sandbox(temp_directory=tmp_path, max_temp_size="5MB")) == {
        "temp_directory": str(tmp_path), "max_temp_directory_size": "5MB"}


def test_a_connection_is_opened_with_access_off_and_its_spill_folder(tmp_path: Path):
    assert _connect_config(None) == ACCESS_OFF
    assert _connect_config(Sandbox()) == ACCESS_OFF
    assert _connect_config(Sandbox(temp_directory=tmp_path)) == {
        **ACCESS_OFF, "temp_directory": str(tmp_path), "max_temp_directory_size": "2GB"}


def test_lock_down_sets_threads_memory_and_freezes_the_configuration():
    con = duckdb.connect()
    con.execute("SET threads = 1")  # DuckDB's default is the core count, which may already be 2
    con = lock_down(con, Sandbox(memory_limit="123MB"))
    setting = {name: con.execute(f"select current_setting('{name}')").fetchone()[0]
               for name in ("threads", "memory_limit", "lock_configuration", "enable_external_access")}
    assert setting["threads"] == 2 and setting["lock_configuration"] is True
    assert setting["enable_external_access"] is False
    assert setting["memory_limit"].replace(" ", "") in ("117.3MiB", "123.0MB", "123MB")
    with pytest.raises(duckdb.Error):
        con.execute("SET threads = 4")


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


def test_a_missing_store_is_one_line_naming_it(tmp_path: Path):
    with pytest.raises(StoreError, match=r"no store at .*none.duckdb: run `uniroute ingest`"):
        open_read_only(tmp_path / "none.duckdb")


def test_empty_sql_is_refused(con):
    with pytest.raises(SqlRefused, match="no SQL statement given"):
        checked_statements(con, "  ;  ")


def test_sql_that_does_not_parse_is_refused(con):
    with pytest.raises(SqlRefused, match="cannot parse the SQL: Parser Error"):
        checked_statements(con, "selec 1")


def test_every_select_comes_back_stripped_in_order(con):
    assert checked_statements(con, " select 1;\n select 2 ") == ["select 1;", "select 2"]


def test_explain_of_a_select_is_allowed_and_of_anything_else_refused(con):
    assert checked_statements(con, "explain select 1") == ["explain select 1"]
    assert checked_statements(con, "explain analyze select 1") == ["explain analyze select 1"]
    with pytest.raises(SqlRefused, match="EXPLAIN wraps a CREATE statement"):
        checked_statements(con, "explain create table t as select 1")


def test_a_refusal_quotes_the_first_80_characters_of_the_statement(con):
    sql = "create table t as select " + ", ".join(f"{i} as c{i}" for i in range(40))
    with pytest.raises(SqlRefused) as refused:
        checked_statements(con, sql)
    assert str(refused.value).endswith(f"a CREATE statement: {sql[:80]!r}")
    explained = "explain " + sql
    with pytest.raises(SqlRefused) as refused:
        checked_statements(con, explained)
    assert str(refused.value).endswith(f"SELECT only: {explained[:80]!r}")


def test_read_text_is_refused_by_name(con):
    with pytest.raises(SqlRefused, match="refused: read_text reads files"):
        checked_statements(con, "select * from read_text('x')")


def test_a_failing_query_is_one_store_error_line():
    with pytest.raises(Exception, match=r"^query failed: Binder Error"):
        sandboxed_over({"t": pd.DataFrame({"x": [1]})}, {}, "select nope from t", Sandbox())


def test_the_last_statements_rows_come_back():
    frame = sandboxed_over({"t": pd.DataFrame({"x": [1, 2]})}, {"v": "select x * 10 as y from t"},
                           "select 1; select y from v order by y", Sandbox())
    assert frame.y.tolist() == [10, 20]


def test_the_store_is_opened_read_only(tmp_path: Path):
    db = tmp_path / "store.duckdb"
    duckdb.connect(str(db)).execute("create table t as select 1 as x").close()
    con = open_read_only(db)
    try:
        assert con.execute("select x from t").fetchall() == [(1,)]
        assert con.execute("select current_setting('enable_external_access')").fetchone() == (False,)
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("insert into t values (2)")
    finally:
        con.close()


def test_a_file_that_is_not_a_store_is_one_line_saying_so(tmp_path: Path):
    db = tmp_path / "store.duckdb"
    db.write_bytes(b"this is not a database " * 400)
    with pytest.raises(DamagedStore, match="is not a readable DuckDB store"):
        open_read_only(db)


def test_a_bad_setting_is_duckdbs_own_error_not_a_locked_store(tmp_path: Path):
    db = tmp_path / "store.duckdb"
    duckdb.connect(str(db)).close()
    with pytest.raises(duckdb.Error) as failed:
        open_read_only(db, Sandbox(temp_directory=tmp_path, max_temp_size="lots"))
    assert not isinstance(failed.value, StoreLocked) and not isinstance(failed.value, StoreError)


def test_a_lock_down_that_fails_is_an_error_not_an_open_connection(tmp_path: Path):
    db = tmp_path / "store.duckdb"
    duckdb.connect(str(db)).close()
    with pytest.raises(duckdb.Error, match="Memory must have a number") as failed:
        open_store_sandbox(db, Sandbox(memory_limit="lots"))
    # Closed before the error leaves: while the error is still held (its traceback keeps the function's frame,
    # as an error handler or a log record would) the store opens for writing in this same process.
    assert failed.value.__traceback__ is not None
    writer = duckdb.connect(str(db))
    writer.execute("create table after_failure as select 1 as x").close()
    writer.close()


def test_an_explain_the_check_cannot_read_is_refused_not_a_crash(con):
    # No space after EXPLAIN: DuckDB parses it, the check's pattern does not read what it wraps.
    for sql in ("explain(select 1)", "EXPLAIN/**/select 1"):
        with pytest.raises(SqlRefused, match="EXPLAIN wraps a something that is not one SELECT statement"):
            checked_statements(con, sql)


def test_a_runaway_query_is_stopped_at_its_timeout():
    # Seconds of work, not hours: without the timer the query ends on its own and the test fails quickly.
    with pytest.raises(SqlTimeout, match=r"the query ran longer than 0.5 s and was stopped"):
        sandboxed_over({}, {}, "select count(*) from range(5000000000) a where a.range % 7 = 3",
                       Sandbox(timeout_seconds=0.5))


def test_a_query_on_the_store_runs_under_the_given_limits_or_the_defaults(tmp_path: Path):
    db = tmp_path / "store.duckdb"
    duckdb.connect(str(db)).execute("create table t as select 1 as x").close()
    sql = "select current_setting('memory_limit') as m, current_setting('threads') as n, count(*) as c from t"
    given = read_only_query(db, sql, Sandbox(memory_limit="123MB"))
    default = read_only_query(db, sql)
    assert given.m[0].replace(" ", "") in ("117.3MiB", "123.0MB") and given.c[0] == 1
    assert default.m[0].replace(" ", "") in ("953.6MiB", "1.0GB", "1000.0MB") and default.n[0] == 2


def test_a_finished_querys_timer_never_interrupts_the_next_query():
    con = sandbox_over({}, {}, Sandbox())
    try:
        run_sandboxed(con, "select 1", Sandbox(timeout_seconds=0.05))
        # Work on the same connection for longer than 0.05 s: the first query's timer, left running, would stop it.
        result = run_sandboxed(con, "select count(*) as c from range(300000000) a where a.range % 7 = 3",
                               Sandbox(timeout_seconds=120))
    finally:
        con.close()
    assert result.c[0] > 0


def test_only_the_named_tables_and_views_are_visible():
    tables = {"t": pd.DataFrame({"x": [1]})}
    assert sandboxed_over(tables, {}, "select x from t", Sandbox()).x.tolist() == [1]
    with pytest.raises(StoreError, match="_src_t"):  # the loading name is gone once the table is made
        sandboxed_over(tables, {}, "select * from _src_t", Sandbox())


def test_a_view_that_does_not_bind_is_duckdbs_error():
    with pytest.raises(duckdb.Error, match="nope"):
        sandbox_over({}, {"v": "select nope"}, Sandbox())


def test_the_store_sandbox_reads_the_embeddings_dataset_and_no_other_file(tmp_path: Path):
    """The `embeddings` view over the store's Parquet dataset answers in the sandbox (its folder allowed before
    access goes off), while a file beside it stays refused."""
    db = tmp_path / "uniroute.duckdb"
    with store.session(db, "test") as s:
        write_partition(root_of(s.con), "e1", ["h1", "h2"], np.eye(2, 3, dtype=np.float32))
    (tmp_path / "other.csv").write_text("a\n1\n")
    con = open_store_sandbox(db, Sandbox())
    try:
        assert con.execute("select count(*) from embeddings").fetchone() == (2,)
        with pytest.raises(duckdb.Error):
            con.execute(f"select * from read_csv('{tmp_path / 'other.csv'}')").fetchall()
    finally:
        con.close()
