"""A user's query streamed under its limits: the row cap, the timeout over fetching and reading, a cancel
(Ctrl-C), the spill folder and its cap, and the spill folders a killed run leaves."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from uniroute.store import (
    Sandbox,
    SqlInterrupted,
    SqlTimeout,
    StoreError,
    StreamedQuery,
    private_temp_dir,
    sandbox_over,
    stale_temp_dirs,
)
from uniroute.store.sql_stream import BATCH_ROWS, size_bytes

FOREVER = "select sum(hash(range)) from range(1000000000000)"  # hours of work (hash: no shortcut), no memory


def _query(sql: str, sandbox: Sandbox | None = None, **options) -> StreamedQuery:
    sandbox = sandbox or Sandbox(timeout_seconds=30)
    return StreamedQuery(sandbox_over({}, {}, sandbox), sql, sandbox, **options)


@pytest.mark.parametrize(("cap", "rows", "truncated"), [(None, 25_000, False), (12_345, 12_345, True),
                                                         (24_000, 24_000, True), (25_000, 25_000, False),
                                                         (BATCH_ROWS, BATCH_ROWS, True)])
def test_rows_come_in_batches_up_to_the_cap(cap, rows, truncated):
    with _query("select * from range(25000)", max_rows=cap) as q:
        frames = list(q)
    assert sum(map(len, frames)) == rows and max(map(len, frames)) <= BATCH_ROWS
    assert q.truncated is truncated
    assert frames[0].columns.tolist() == ["range"]


def test_no_rows_still_name_the_columns():
    with _query("select 1 as a, 'x' as b where false") as q:
        frames = list(q)
    assert len(frames) == 1 and frames[0].empty and frames[0].columns.tolist() == ["a", "b"]


def test_the_timeout_covers_the_reader_too():
    started = time.monotonic()
    with pytest.raises(SqlTimeout, match=r"longer than 0.5 s"), _query(
            "select * from range(10000000)", Sandbox(timeout_seconds=0.5)) as q:
        for _ in q:
            time.sleep(0.2)  # a slow terminal: DuckDB has long finished the batches it was asked for
    assert time.monotonic() - started < 1.5


def test_the_timeout_stops_a_long_query():
    started = time.monotonic()
    with pytest.raises(SqlTimeout), _query(FOREVER, Sandbox(timeout_seconds=0.5)) as q:
        list(q)
    assert time.monotonic() - started < 1.5


def test_cancel_interrupts_the_query_at_once():
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(SqlInterrupted, match=r"interrupted \(Ctrl-C\)"), _query(FOREVER, cancel=cancel) as q:
        list(q)
    assert time.monotonic() - started < 1.5


def test_a_spill_goes_to_the_given_folder_never_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spill = tmp_path / "spill"
    spill.mkdir()
    # 64 MB, not less: at 30 MB DuckDB's sort sometimes failed to pin a block under a loaded CI ("Out of Memory
    # Error: failed to pin block") instead of spilling; 8M rows of two 8-byte columns still far exceed the cap.
    sandbox = Sandbox(timeout_seconds=60, memory_limit="64MB", temp_directory=spill, max_temp_size="2GB")
    seen: set[str] = set()
    with _query("select random() as x, range as r from range(8000000) order by x", sandbox, max_rows=5) as q:
        threading.Thread(target=lambda: [seen.update(os.listdir(spill)) or time.sleep(0.01) for _ in range(300)],
                         daemon=True).start()
        assert sum(map(len, q)) == 5
    assert any(name.startswith("duckdb_temp") for name in seen), seen
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spill"]  # no .tmp in the working directory


def test_a_spill_beyond_its_cap_stops_the_query(tmp_path):
    sandbox = Sandbox(timeout_seconds=120, memory_limit="30MB", temp_directory=tmp_path, max_temp_size="5MB")
    with pytest.raises(StoreError, match=r"spilled more than 5MB to disk and was stopped"), _query(
            "select random() as x, range as r from range(20000000) order by x", sandbox, max_rows=5) as q:
        list(q)


def test_sizes_read_as_duckdb_reads_them():
    assert size_bytes("2GB") == 2_000_000_000 and size_bytes("2 GiB") == 2**31 and size_bytes("512kb") == 512_000
    with pytest.raises(ValueError, match="not a size: 'lots'"):
        size_bytes("lots")


def test_the_folder_of_a_killed_run_is_found_and_removed(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"sql-{gone.stdout.strip()}"
    (dead / "sub").mkdir(parents=True)
    alive = tmp_path / f"sql-{os.getppid()}"  # a live process's folder is never touched
    alive.mkdir()
    assert stale_temp_dirs(tmp_path) == [dead]
    with private_temp_dir(tmp_path) as mine:
        assert mine == tmp_path / f"sql-{os.getpid()}" and mine.is_dir()
        assert not dead.exists() and alive.exists()
    assert not mine.exists() and alive.exists()


def test_an_empty_spill_root_is_removed_after_the_query(tmp_path):
    root = tmp_path / "tmp"
    with private_temp_dir(root):
        assert root.is_dir()
    assert not root.exists()
    assert stale_temp_dirs(Path(tmp_path / "absent")) == []
