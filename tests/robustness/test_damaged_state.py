"""Damaged or surprising state inside $UNIROUTE_HOME: a store file that is not DuckDB or is cut short, a damaged
mlflow.db, `published/current` replaced by a folder, a file named `failed` in the inbox, a setting that does
not parse. Each is ONE line naming the file (or variable) and the repair, at once: no traceback, no wait."""

from __future__ import annotations

import re
import shutil
import time

import pytest
from typer.testing import CliRunner

from tests.robustness.conftest import table_checksums
from uniroute.cli import app

runner = CliRunner()
# A refusal comes at once; a wait for a writer that never comes would take UNIROUTE_STORE_WAIT_SECONDS (120).
AT_ONCE_SECONDS = 20


def _one_line(args: list[str], code: int = 1) -> str:
    """The single stderr line of a command that must fail (or warn) at once."""
    started = time.monotonic()
    result = runner.invoke(app, args, catch_exceptions=False)
    assert time.monotonic() - started < AT_ONCE_SECONDS
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("damage", ["not a database", "cut short"])
def test_a_store_that_is_not_duckdb_is_named_with_its_repair(pool, damage):
    db = pool.db_path
    if damage == "not a database":
        db.write_text("prompt_id,model,score\n")
    else:
        db.write_bytes(db.read_bytes()[:100_000])
    for args in (["publish"], ["build"], ["route", "x"], ["sql", "select 1"], ["doctor", "--check"]):
        line = _one_line(args)
        assert line.startswith(f"error: {db} is not a readable DuckDB store ("), (args, line)
        assert line.endswith(f"or move it aside (mv {db} {db}.damaged) to start an empty store"), (args, line)


def test_a_damaged_mlflow_store_is_named_and_the_store_still_works(pool, monkeypatch):
    monkeypatch.setenv("UNIROUTE_MLFLOW", "true")
    mlflow_db = pool.home / "mlflow.db"
    mlflow_db.write_bytes(b"not sqlite at all" * 100)
    expected = (f"{mlflow_db} is not a readable MLflow store (file is not a database): move it aside "
                f"(mv {mlflow_db} {mlflow_db}.damaged) and `uniroute doctor` logs every router version")
    checked = runner.invoke(app, ["doctor", "--check"], catch_exceptions=False)
    assert checked.exit_code == 1 and f"broken   mlflow: {expected}" in checked.stdout, checked.output
    warned = _one_line(["publish", "--force"], code=0)  # the publication is committed; MLflow waits for the repair
    assert warned.startswith(f"warning: mlflow: {expected}")
    mlflow_db.rename(mlflow_db.with_name("mlflow.db.damaged"))  # the repair the line names
    assert runner.invoke(app, ["doctor"]).exit_code == 0
    assert "broken" not in runner.invoke(app, ["doctor", "--check"]).stdout


def test_current_replaced_by_a_folder_is_named_before_anything_is_published(pool, monkeypatch):
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    current = pool.published_dir / "current"
    current.unlink()
    current.mkdir()
    before = table_checksums(pool.db_path)
    line = _one_line(["publish", "--force"])
    aside = pool.home / "current.moved"
    assert line == (f"error: {current} is a directory, not the link to the current snapshot that publishing "
                    f"switches: move it out of the way (mv {current} {aside}) and run `uniroute doctor`")
    assert table_checksums(pool.db_path) == before
    checked = runner.invoke(app, ["doctor", "--check"])
    assert checked.exit_code == 1 and f"broken   published: {current} is a directory" in checked.stdout
    current.rename(aside)
    assert runner.invoke(app, ["doctor"]).exit_code == 0 and current.is_symlink()
    assert runner.invoke(app, ["publish", "--force"]).exit_code == 0


def test_a_file_named_failed_in_the_inbox_is_named_before_any_file_moves(pool):
    inbox = pool.home / "inbox"
    inbox.mkdir()
    (inbox / "failed").write_text("a user's notes\n")
    (inbox / "junk.csv").write_text("a,b\n1,2\n")
    line = _one_line(["inbox"])
    failed = inbox / "failed"
    assert line == (f"error: {failed} is not a folder, but the inbox keeps its failed files in a folder there: move "
                    f"it aside (mv {failed} {failed}.moved) and run `uniroute inbox` again")
    assert (inbox / "junk.csv").exists() and failed.read_text() == "a user's notes\n"


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("UNIROUTE_SEED", "abc", "Input should be a valid integer"),
    ("UNIROUTE_STORE_WAIT_SECONDS", "soon", "Input should be a valid number"),
    ("UNIROUTE_SQL_TEMP_LIMIT", "lots", "not a size: 'lots' (give e.g. 500MB or 2GB)"),
])
def test_a_setting_that_does_not_parse_is_named(pool, monkeypatch, variable, value, says):
    monkeypatch.setenv(variable, value)
    command = ["sql", "select 1"] if variable == "UNIROUTE_SQL_TEMP_LIMIT" else ["build"]
    line = _one_line(command)
    assert re.match(rf"error: {variable}(='{value}')?: ", line) and says in line, line


def test_a_home_copied_without_keeping_its_links_is_named_on_publish(pool, tmp_path, monkeypatch):
    copy = tmp_path / "copy"
    shutil.copytree(pool.home, copy, symlinks=False)  # `current` became a folder holding a copy of the snapshot
    monkeypatch.setenv("UNIROUTE_HOME", str(copy))
    line = _one_line(["publish", "--force"])
    assert "current is a directory" in line and "move it out of the way" in line
