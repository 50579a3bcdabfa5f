"""Every way a user's SQL reaches DuckDB is sandboxed, each guard on its own: the store (read-only file), the
published snapshot (an in-memory database, while a writer holds the store) and the store again once the writer
lets go (a query on tables only the store has waits for it).

The hostile corpus of test_hostile_sql runs on the snapshot path too, and each guard's setting is read back
from the live sandbox connection on every path, so dropping one guard fails a test even where another guard
would still have refused the statement.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.robustness.conftest import file_sha256
from tests.robustness.test_hostile_sql import HOSTILE
from uniroute.cli import app
from uniroute.pipeline.serving import snapshot
from uniroute.settings import Settings
from uniroute.store.sandbox import Sandbox, sandbox_over

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()
REFUSED = 2
MEMORY_LIMIT = "64MB"
# Holds the store's writer lock, as a long build would, until killed (or for argv[2] seconds).
HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from uniroute import store
    with store.session(Path(sys.argv[1]) / "uniroute.duckdb", "build") as s:
        print("holding", flush=True)
        time.sleep(float(sys.argv[2]))
""")
# One row: every guard's setting as the sandbox connection that runs the user's query sees it.
SETTINGS_SQL = (
    "select current_setting('enable_external_access') as external_access, "
    "current_setting('autoinstall_known_extensions') as autoinstall, "
    "current_setting('autoload_known_extensions') as autoload, "
    "current_setting('lock_configuration') as locked, "
    "current_setting('memory_limit') as memory_limit, "
    "current_setting('threads') as threads"
)
GUARDS = {"external_access": False, "autoinstall": False, "autoload": False, "locked": True, "threads": 2}


def _hold(home: Path, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "UNIROUTE_HOME": str(home)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(home), str(seconds)], env=env, cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    return holder


def _stop(holder: subprocess.Popen) -> None:
    if holder.poll() is None:
        holder.kill()
    holder.wait(timeout=60)
    holder.stdout.close()


@pytest.fixture(scope="module")
def held_home(pool_template, tmp_path_factory):
    """A private copy of the built pool whose store a writer process holds for the whole module."""
    home = tmp_path_factory.mktemp("held")
    shutil.copytree(pool_template[0], home, symlinks=True, dirs_exist_ok=True)
    holder = _hold(home, 3600)
    yield home
    _stop(holder)


@pytest.fixture
def held(held_home, monkeypatch) -> Settings:
    """The held pool as this test's UNIROUTE_HOME (environment set per test, so no other test sees it)."""
    monkeypatch.setenv("UNIROUTE_HOME", str(held_home))
    monkeypatch.setenv("UNIROUTE_STORE_WAIT_SECONDS", "1")  # a query the snapshot cannot answer gives up at once
    monkeypatch.setenv("UNIROUTE_SQL_MEMORY_LIMIT", MEMORY_LIMIT)
    return Settings(home=held_home)


def _sql(*args: str):
    return runner.invoke(app, ["sql", *args], catch_exceptions=False)


def _settings_row(result) -> dict:
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    return row


def _assert_guards(row: dict) -> None:
    for name, wanted in GUARDS.items():
        assert row[name] == wanted, (name, row)
    assert re.fullmatch(r"6[01](\.\d+)? MiB|64(\.\d+)? MB", row["memory_limit"]), row


def test_every_guard_is_set_on_the_store_path(pool, monkeypatch):
    monkeypatch.setenv("UNIROUTE_SQL_MEMORY_LIMIT", MEMORY_LIMIT)
    result = _sql(SETTINGS_SQL, "--json")
    assert "published snapshot" not in result.stderr  # the store answered
    _assert_guards(_settings_row(result))


def test_every_guard_is_set_on_the_snapshot_path(held):
    result = _sql(SETTINGS_SQL, "--json")
    version = snapshot.current_version(held.published_dir)
    assert f"answered from published snapshot {version}" in result.stderr, result.stderr
    _assert_guards(_settings_row(result))


def test_every_guard_is_set_on_the_store_once_the_writer_lets_go(pool, monkeypatch):
    """A query on a table only the store has waits for the writer, then runs on the store, as locked down."""
    monkeypatch.setenv("UNIROUTE_SQL_MEMORY_LIMIT", MEMORY_LIMIT)
    holder = _hold(pool.home, 2)
    try:
        result = _sql(f"{SETTINGS_SQL} from results limit 1", "--json")
    finally:
        _stop(holder)
    assert "waiting for the store: `build` (pid" in result.stderr, result.stderr
    _assert_guards(_settings_row(result))


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_sql_is_refused_on_the_snapshot_path(held, tmp_path, case):
    statement, pattern = HOSTILE[case]
    sql = statement.format(tmp=tmp_path, db=held.db_path, published=held.published_dir)
    store_before = file_sha256(held.db_path)
    files_before = {str(p): p.stat().st_mtime_ns for p in held.home.rglob("*") if p.is_file()}
    result = _sql(sql)
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), result.stderr
    if "Catalog Error" in pattern:
        # A table the snapshot does not have: the query waits for the store (1 s here) and gives up.
        assert result.exit_code in (1, REFUSED), result.output
    else:
        assert result.exit_code == REFUSED, result.output
        assert len(lines) == 1 and re.search(pattern, lines[0]), lines
    assert "root:" not in result.output  # nothing of /etc/passwd leaks
    assert file_sha256(held.db_path) == store_before
    assert {str(p): p.stat().st_mtime_ns for p in held.home.rglob("*") if p.is_file()} == files_before
    assert list(tmp_path.iterdir()) == []  # no file written where the SQL pointed either


def test_reading_files_is_refused_by_the_setting_alone_on_the_snapshot_path(held):
    """Past the statement check (which refuses every file reader first), external access being off still stops
    them: the snapshot path's locked-down connection, given the SQL directly."""
    con = sandbox_over({"t": pd.DataFrame({"a": [1]})}, {}, Sandbox())
    try:
        for reader in ("read_csv", "read_parquet", "read_json_auto"):  # read_blob, read_text: see the store path
            with pytest.raises(duckdb.PermissionException):
                con.execute(f"select * from {reader}('/etc/passwd')").fetchall()
    finally:
        con.close()


def test_a_runaway_query_on_the_snapshot_path_is_stopped_at_its_timeout(held):
    result = _sql("select count(*) from range(1000000000000)", "--timeout", "1")
    assert result.exit_code == 1, result.output
    assert "ran longer than 1 s and was stopped" in result.stderr


def test_a_query_over_the_memory_limit_on_the_snapshot_path_fails_in_one_line(held):
    # One list of 30 million strings: over the limit in 0.2 s CPU (a count(distinct) over them took 7 s, 17-30 s
    # on a loaded machine, and once ran into the 30 s timeout instead); without the limit it would succeed.
    result = _sql("select list(i::varchar || 'x') from range(30000000) t(i)")
    assert result.exit_code == 1, result.output
    assert re.search(r"query failed: Out of Memory", result.stderr), result.stderr


def test_the_store_file_itself_cannot_be_read_as_a_blob(pool):
    """DuckDB lets a connection read its own file with external access off: read_blob and read_text are refused
    by name on the store path (this hole was found by the sandbox's property tests)."""
    for sql in (f"select size from read_blob('{pool.db_path}')", f"select content from read_text('{pool.db_path}')"):
        result = _sql(sql)
        assert result.exit_code == REFUSED and "reads files" in result.output, result.output
