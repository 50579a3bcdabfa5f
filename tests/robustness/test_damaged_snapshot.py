"""A damaged published snapshot (a file edited, deleted, or its manifest cut short): `doctor --check` names the
damage and the repair command in one line and changes nothing; `doctor` repairs it (publishes the champion
again and points `current` at it) and says so."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from tests.robustness.conftest import table_checksums
from uniroute.cli import app
from uniroute.pipeline.serving import snapshot

runner = CliRunner()


def _damage(folder, how: str) -> str:
    """Damage one snapshot folder; what read_snapshot then says, in part."""
    if how == "file edited":
        (folder / "routes.parquet").write_bytes(b"not parquet any more")
        return "checksum mismatch in"
    if how == "file deleted":
        (folder / "budgets.json").unlink()
        return "cannot be read as a snapshot (FileNotFoundError"
    (folder / "manifest.json").write_bytes((folder / "manifest.json").read_bytes()[:40])
    return "cannot be read as a snapshot (JSONDecodeError"


@pytest.mark.parametrize("how", ["file edited", "file deleted", "manifest cut"])
def test_doctor_check_names_a_damaged_snapshot_and_doctor_publishes_it_again(pool, monkeypatch, how):
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    published = pool.published_dir
    version = os.readlink(published / "current")
    said = _damage(published / version, how)
    before = table_checksums(pool.db_path)

    checked = runner.invoke(app, ["doctor", "--check"], catch_exceptions=False)
    assert checked.exit_code == 1, checked.output
    broken = [x for x in checked.stdout.splitlines() if x.startswith("broken")]
    assert len(broken) == 1, checked.stdout
    assert broken[0].startswith(f"broken   published: the newest publication {version} is damaged: ")
    assert said in broken[0]
    assert broken[0].endswith("; `uniroute doctor` (or `uniroute publish --force`) publishes it again")
    assert table_checksums(pool.db_path) == before and os.readlink(published / "current") == version

    repaired = runner.invoke(app, ["doctor"], catch_exceptions=False)
    assert repaired.exit_code == 0, repaired.output
    line = next(x for x in repaired.stdout.splitlines() if x.startswith("repaired published"))
    assert line.startswith(f"repaired published: the newest publication {version} was damaged (")
    new = os.readlink(published / "current")
    assert new != version and line.endswith(f"published the champion again as {new}, current once this run commits")
    assert snapshot.read_snapshot(published / new).manifest["version"] == new  # complete, checksum holds
    again = runner.invoke(app, ["doctor", "--check"])
    assert again.exit_code == 0 and "broken" not in again.stdout, again.stdout
    routed = runner.invoke(app, ["route", "what is two and two"])
    assert routed.exit_code == 0, routed.output
