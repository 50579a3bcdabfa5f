"""`uniroute doctor --check` repairs nothing and writes nothing: it used to open a writer session, which recorded an
operations row (so the store file changed), took the lock file and marked killed runs. Now the store is opened
read-only: every file under the home keeps its bytes, and no file appears or goes."""

from __future__ import annotations

import os
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
