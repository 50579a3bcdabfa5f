"""Properties of the user-SQL sandbox, on both of its databases (the store file opened read-only, and the
in-memory copy the published snapshot is queried in): generated statements that read or write files, reach the
network, install or load extensions or change settings are refused, however they are spelled or wrapped."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uniroute import store

SANDBOX = store.Sandbox(timeout_seconds=10)
FILE_FUNCTIONS = ["read_text", "read_blob", "read_csv", "read_csv_auto", "read_json", "read_json_auto",
                  "read_ndjson", "read_json_objects", "read_parquet", "parquet_scan", "parquet_metadata",
                  "parquet_schema", "glob", "sniff_csv"]
PATHS = st.sampled_from(["/etc/passwd", "/etc/hostname", "../../etc/passwd", "~/.ssh/id_rsa", "/proc/self/environ",
                         "https://example.com/x.csv", "http://127.0.0.1:5000/x", "s3://bucket/x.parquet",
                         "/tmp/*"])
# The store's own file, which DuckDB lets a read-only connection read even with external access off: read_blob and
# read_text are refused by name for it (tests/robustness/test_sandbox_paths.py).
STATEMENT_PATHS = st.one_of(PATHS, st.just("{db}"))
# Statements other than SELECT that touch files, extensions or settings (paths filled in below).
STATEMENTS = st.sampled_from([
    "copy (select 1) to '{path}'", "copy t to '{path}' (format parquet)", "copy t from '{path}'",
    "attach '{path}' as other", "attach '{path}' as other (read_only)", "detach t", "install httpfs",
    "force install httpfs", "load httpfs", "load '{path}'", "set enable_external_access = true",
    "set global enable_external_access = true", "reset enable_external_access", "set lock_configuration = false",
    "set memory_limit = '100GB'", "set threads = 64", "set autoinstall_known_extensions = true",
    "pragma enable_profiling", "pragma memory_limit='100GB'", "call enable_external_access()",
    "export database '{path}'", "import database '{path}'", "create secret (type s3)", "checkpoint",
    "create table x as select * from read_text('{path}')", "insert into t select 2", "update t set x = 2",
    "delete from t", "drop table t", "vacuum", "begin", "explain analyze copy (select 1) to '{path}'",
])
SPELLINGS = st.sampled_from([str.lower, str.upper, lambda s: s, lambda s: "  " + s + " ;",
                             lambda s: "/* hi */ " + s, lambda s: "-- note\n" + s, lambda s: s.replace(" ", "\n  ")])


@st.composite
def file_reading_selects(draw) -> str:
    """A SELECT that reads a file through a table function, somewhere inside it."""
    call = f"{draw(st.sampled_from(FILE_FUNCTIONS))}('{draw(PATHS)}')"
    shape = draw(st.sampled_from([
        "select * from {call}", "select count(*) from {call}", "with f as (select * from {call}) select * from f",
        "select * from t where exists (select 1 from {call})",
        "select count(*) from t union all select count(*) from {call}",
        "select (select count(*) from {call}) as n", "select * from t, lateral (select * from {call}) f",
        "select * from (select * from {call}) limit 1", "explain analyze select * from {call}",
    ]))
    return draw(SPELLINGS)(shape.format(call=call))


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sandbox_props") / "store.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create table t as select 1 as x")
    return path


def _on_both(db_path: Path, sql: str) -> list[BaseException]:
    """The error each database gives (store file, in-memory snapshot copy); a result fails the property."""
    errors = []
    for run in (lambda: store.read_only_query(db_path, sql, SANDBOX),
                lambda: store.sandboxed_over({"t": pd.DataFrame({"x": [1]})}, {}, sql, SANDBOX)):
        try:
            frame = run()
        except store.StoreError as exc:
            errors.append(exc)
            continue
        raise AssertionError(f"the sandbox ran {sql!r}: {frame.head(3).to_dict('records')}")
    return errors


@settings(max_examples=80)
@given(file_reading_selects())
def test_a_select_reading_a_file_or_url_is_refused(db_path, sql):
    for exc in _on_both(db_path, sql):
        assert isinstance(exc, store.SqlRefused) or "Catalog Error" in str(exc), (sql, exc)
        assert "root:" not in str(exc)


@settings(max_examples=60)
@given(STATEMENTS, STATEMENT_PATHS, SPELLINGS, st.booleans())
def test_statements_that_touch_files_extensions_or_settings_are_refused(db_path, statement, path, spell, after):
    sql = spell(statement.format(path=path.replace("{db}", str(db_path))))
    if after:  # behind an innocent SELECT in the same text
        sql = "select 1; " + sql
    for exc in _on_both(db_path, sql):
        assert isinstance(exc, store.SqlRefused), (sql, exc)
    with duckdb.connect(str(db_path), read_only=True) as con:  # the store is as it was
        assert con.execute("select * from t").fetchall() == [(1,)]
        assert [r[0] for r in con.execute("show tables").fetchall()] == ["t"]


@settings(max_examples=40)
@given(st.sampled_from(["enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions",
                        "lock_configuration", "memory_limit", "threads"]))
def test_every_guard_reads_back_locked_on_both_databases(db_path, name):
    sql = f"select current_setting('{name}') as v"
    got = [store.read_only_query(db_path, sql, SANDBOX).v[0],
           store.sandboxed_over({"t": pd.DataFrame({"x": [1]})}, {}, sql, SANDBOX).v[0]]
    wanted = {"enable_external_access": False, "autoinstall_known_extensions": False,
              "autoload_known_extensions": False, "lock_configuration": True}
    if name in wanted:
        assert got == [wanted[name]] * 2, (name, got)
    else:
        assert got[0] == got[1], (name, got)
