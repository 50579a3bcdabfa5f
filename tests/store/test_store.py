import duckdb
import pandas as pd
import pyarrow as pa
import pytest

from uniroute import store


def test_schema_is_idempotent_and_creates_tables(db_path):
    with store.opened(db_path) as con:
        store.apply_schema(con)  # a second application changes nothing
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
    assert {"prompts", "models", "results", "ingested_files", "quarantine"} <= tables


def test_a_session_commits_all_or_nothing_and_logs_the_run(db_path):
    with pytest.raises(RuntimeError), store.session(db_path, "ingest", inputs="a.csv") as s:
        s.con.execute("insert into models values ('m', 1.0, 'active', now())")
        raise RuntimeError("boom")
    with store.session(db_path, "set-cost", inputs="m2") as s:
        s.con.execute("insert into models values ('m2', 1.0, 'active', now())")
        s.detail = "added m2"
    with store.opened(db_path, read_only=True) as con:
        assert con.execute("select model from models").fetchall() == [("m2",)]
        runs = con.execute("select kind, status, inputs, detail from operations order by started").fetchall()
    assert runs == [("ingest", "failed", "a.csv", "RuntimeError: boom"), ("set-cost", "succeeded", "m2", "added m2")]


def test_a_killed_run_is_marked_interrupted_by_the_next_one(db_path):
    with store.opened(db_path) as con:  # what a run killed after its start leaves behind
        store.execute(con, "operation_event", op_id="dead", kind="build", event="started", at=pd.Timestamp.now(),
                      pid=999999, inputs=None, detail=None)
    with store.session(db_path, "publish") as s:
        assert s.interrupted == ["build (pid 999999)"]
    with store.opened(db_path, read_only=True) as con:
        assert con.execute("select status from operations where op_id = 'dead'").fetchone() == ("interrupted",)


def test_sessions_do_not_nest(db_path):
    with (store.session(db_path, "build"), pytest.raises(store.StoreError, match="nested session"),
          store.session(db_path, "publish")):
        pass


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


def test_memory_limited_sets_the_limit_for_the_block_and_restores_it(db_path):
    with store.opened(db_path) as con:
        before = store.query_row(con, "memory_limit")[0]
        with store.memory_limited(con, "300MB"):
            assert store.query_row(con, "memory_limit")[0] == "286.1 MiB"  # DuckDB reports 300 MB in MiB
        assert store.query_row(con, "memory_limit")[0] == before
        with pytest.raises(RuntimeError, match="boom"), store.memory_limited(con, "300MB"):
            raise RuntimeError("boom")
        assert store.query_row(con, "memory_limit")[0] == before
        # Nested: the inner block gives back the outer cap, not DuckDB's default (a build's embedding fill inside
        # the build's cap left the rest of the build uncapped).
        with store.memory_limited(con, "300MB"):
            with store.memory_limited(con, "200MB"):
                assert store.query_row(con, "memory_limit")[0] == "190.7 MiB"
            assert store.query_row(con, "memory_limit")[0] == "286.1 MiB"
        assert store.query_row(con, "memory_limit")[0] == before


def test_query_batches_streams_every_row_in_batches(db_path):
    with store.opened(db_path) as con:
        store.write_frame(con, "models", pd.DataFrame({"model": [f"m{i}" for i in range(5)], "status": "active",
                                                       "first_seen": pd.Timestamp.now()}))
        # Each model's cost is an undated per-call price (prices: the one source of model costs).
        store.write_frame(con, "prices", pd.DataFrame({"model": [f"m{i}" for i in range(5)], "per_call": 1.0,
                                                       "valid_from": pd.Timestamp("1970-01-01").date(),
                                                       "source": "test", "set_at": pd.Timestamp.now()}))
        batches = list(store.query_batches(con, "build_models", batch_rows=2))
    assert [b.num_rows for b in batches if b.num_rows] and sum(b.num_rows for b in batches) == 5
    assert [m for b in batches for m in b.column("model").to_pylist()] == [f"m{i}" for i in range(5)]


@pytest.mark.parametrize("expose, kept", [(store.copied, False), (store.registered, True)])
def test_a_copied_frame_is_let_go_inside_the_transaction_a_registered_one_at_the_commit(db_path, expose, kept):
    # A file ingested block by block in one transaction held every block's registered frames until the commit.
    baseline = pa.total_allocated_bytes()
    with store.session(db_path, "ingest") as s:
        for block in range(3):
            frame = pa.table({"text": [f"block {block} row {i} " * 8 for i in range(20_000)]})
            with expose(s.con, "ingest_frame", frame):
                assert s.con.execute("select count(*) from ingest_frame").fetchall() == [(20_000,)]
            del frame
        held = pa.total_allocated_bytes() - baseline
        assert (held > 2_000_000) == kept, held
    assert pa.total_allocated_bytes() - baseline < 1_000_000


def test_a_row_read_leaves_the_connection_free_for_a_registered_frame(db_path):
    with store.session(db_path, "test") as s:
        s.con.execute("insert into models values ('a', 1.0, 'active', now()), ('b', 2.0, 'active', now())")
    with store.opened(db_path, read_only=True) as con:
        assert store.query_row(con, "active_models") is not None  # two rows: the second is never fetched
        with store.registered(con, "wanted", pd.DataFrame({"x": [1]})):
            assert con.execute("select count(*) from wanted").fetchall() == [(1,)]
