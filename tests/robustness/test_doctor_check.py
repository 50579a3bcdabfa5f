"""`uniroute doctor --check` repairs nothing and writes nothing: it used to open a writer session, which recorded an
operations row (so the store file changed), took the lock file and marked killed runs. Now the store is opened
read-only: every file under the home keeps its bytes, and no file appears or goes."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from typer.testing import CliRunner

from tests.robustness.conftest import file_sha256
from uniroute import store
from uniroute.cli import app
from uniroute.settings import Settings

runner = CliRunner()


def _tree(home: Path) -> dict[str, str]:
    """Every entry under the home: a file by its sha256, a link by its target, a folder as "/"."""
    out = {}
    for path in sorted(home.rglob("*")):
        rel = str(path.relative_to(home))
        out[rel] = ("-> " + os.readlink(path)) if path.is_symlink() else (file_sha256(path) if path.is_file() else "/")
    return out


def test_doctor_check_leaves_every_file_of_the_home_as_it_was(pool: Settings):
    with store.opened(pool.db_path) as con:  # a run killed mid-way: a repair would mark it interrupted
        con.execute("insert into operation_events values ('killed', 'build', 'started', ?, 999999, '', null)",
                    [datetime(2026, 1, 1)])
    before = _tree(pool.home)
    checked = runner.invoke(app, ["doctor", "--check"], catch_exceptions=False)
    assert checked.exit_code in (0, 1), checked.output
    assert "runs left unfinished: build (pid 999999)" in checked.output, checked.output
    assert _tree(pool.home) == before
    repaired = runner.invoke(app, ["doctor"], catch_exceptions=False)  # the repair does write: the test can tell
    assert "marked interrupted" in repaired.output, repaired.output
    assert _tree(pool.home) != before


def test_doctor_check_on_a_store_another_process_holds_says_so_in_one_line_and_writes_nothing(pool: Settings):
    """A pipeline step holding the writer lock: the check neither waits nor fails with a traceback, and what it
    cannot read it names, so an operator knows to retry when the step is done."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('held', flush=True);"
         " time.sleep(120)", str(pool.db_path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before = _tree(pool.home)
        checked = runner.invoke(app, ["doctor", "--check"])
        assert checked.exit_code != 0, checked.output
        assert "locked" in checked.output and "Traceback" not in checked.output, checked.output
        assert _tree(pool.home) == before
    finally:
        holder.kill()
        holder.wait()
