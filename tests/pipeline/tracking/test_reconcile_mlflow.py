"""Reconciliation's MLflow checks against a real SQLite tracking store: the champion logged and its alias checked,
a store that moved with its home rewritten (or reported), another home's store or a damaged one reported.
Added where the mutation run (make mutation) found these checks untested by fast tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.pipeline.toy_store import save_toy_champion
from uniroute import store
from uniroute.errors import is_disk_full
from uniroute.faults import DISK_FULL_ENV
from uniroute.pipeline.pool import registry
from uniroute.pipeline.reconcile import Report, reconcile


def _reconcile(db_path: Path, tmp_path: Path, tracking: tuple[str, Path | None], repair: bool = True) -> Report:
    with store.session(db_path, "doctor") as s:
        return reconcile(s, tmp_path / "published", tracking[0], tracking[1], repair=repair)


def _mlflow(report: Report) -> list[tuple[str, str]]:
    return [(f.status, f.detail) for f in report.findings if f.check == "mlflow"]


def _promote_a_second_version(db_path: Path) -> None:
    with store.session(db_path, "test") as s:
        champion = registry.load_champion(s.con)
        registry.save_router_version(s.con, registry.NewVersion(
            champion.router, "r-002", champion.clustering_id, "kmeans", "fp-2", 0.8, True, "test",
            centroids=champion.router.assigner))


def test_doctor_logs_the_champion_and_a_check_finds_the_alias_in_step(db_path, tracking, tmp_path):
    save_toy_champion(db_path)
    found = _mlflow(_reconcile(db_path, tmp_path, tracking))
    assert found[-1] == ("ok", "alias champion names the store's champion r-001")
    assert found[:-1] and all(status == "synced" for status, _ in found[:-1])  # logged as routine, not repaired
    assert _mlflow(_reconcile(db_path, tmp_path, tracking, repair=False)) == [
        ("ok", "alias champion names the store's champion r-001")]
    # Without an artifact root there is no MLflow to check (a home without MLflow).
    assert _mlflow(_reconcile(db_path, tmp_path, (tracking[0], None))) == []


def test_a_store_champion_mlflow_has_not_seen_is_pending_until_doctor_syncs_it(db_path, tracking, tmp_path):
    save_toy_champion(db_path)
    _reconcile(db_path, tmp_path, tracking)
    _promote_a_second_version(db_path)
    # A check only: the new version waits for its sync (a follow-up's or doctor's), the stale alias named.
    assert _mlflow(_reconcile(db_path, tmp_path, tracking, repair=False)) == [
        ("pending", "1 router version(s) and 0 publication(s) wait for their MLflow sync: an operation's follow-up "
         "logs them (logs/mlflow-sync.log), else `uniroute doctor`; until then MLflow's champion is router r-001, "
         "the store's is r-002")]
    assert _mlflow(_reconcile(db_path, tmp_path, tracking))[-1] == (
        "ok", "alias champion names the store's champion r-002")


def test_a_tracking_store_moved_with_its_home_is_reported_then_rewritten(db_path, tracking, tmp_path):
    save_toy_champion(db_path)
    _reconcile(db_path, tmp_path, tracking)
    uri, artifacts = tracking
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copyfile(uri.removeprefix("sqlite:///"), moved / "mlflow.db")
    shutil.copytree(artifacts, moved / artifacts.name)
    there = (f"sqlite:///{moved / 'mlflow.db'}", moved / artifacts.name)
    line = (f"the MLflow store's artifacts moved from {artifacts.resolve().as_uri()} to "
            f"{there[1].resolve().as_uri()}")
    assert _mlflow(_reconcile(db_path, tmp_path, there, repair=False)) == [
        ("broken", f"{line} (the home was copied or moved): `uniroute doctor` rewrites them")]
    found = _mlflow(_reconcile(db_path, tmp_path, there))
    assert found[0] == ("repaired", f"{line}: rewritten")
    assert found[-1] == ("ok", "alias champion names the store's champion r-001")
    assert _mlflow(_reconcile(db_path, tmp_path, there, repair=False)) == [
        ("ok", "alias champion names the store's champion r-001")]


def test_another_homes_tracking_store_is_reported_and_left_alone(db_path, tracking, tmp_path):
    save_toy_champion(db_path)
    _reconcile(db_path, tmp_path, tracking)
    elsewhere = tmp_path / "elsewhere"
    found = _mlflow(_reconcile(db_path, tmp_path, (tracking[0], elsewhere)))
    assert len(found) == 1 and found[0][0] == "broken"
    assert "belongs to another UNIROUTE_HOME; move it aside" in found[0][1] and not elsewhere.exists()


def test_a_damaged_tracking_store_is_reported_without_opening_mlflow(db_path, tracking, tmp_path):
    save_toy_champion(db_path)
    db_file = Path(tracking[0].removeprefix("sqlite:///"))
    db_file.write_bytes(b"not an sqlite file " * 100)
    found = _mlflow(_reconcile(db_path, tmp_path, tracking))
    assert len(found) == 1 and found[0][0] == "broken" and "is not a readable MLflow store" in found[0][1]
    assert db_file.read_bytes().startswith(b"not an sqlite file")


def test_a_check_never_creates_a_missing_tracking_store(db_path, tmp_path):
    """Only checking (a read-only home): a missing mlflow.db is broken once there is a champion to log, and is
    not created; with no champion there is nothing to log yet."""
    absent = tmp_path / "absent" / "mlflow.db"
    tracking = (f"sqlite:///{absent}", tmp_path / "mlartifacts")
    with store.session(db_path, "doctor") as s:  # an empty store: no champion
        assert _mlflow(reconcile(s, tmp_path / "published", *tracking, repair=False)) == [("ok", "no champion yet")]
    save_toy_champion(db_path)
    assert _mlflow(_reconcile(db_path, tmp_path, tracking, repair=False)) == [
        ("broken", f"{absent} does not exist: `uniroute doctor` logs every router version and publication to a new "
                   "one")]
    assert not absent.exists()


def test_doctor_on_a_store_without_a_champion_finds_mlflow_in_step(db_path, tracking, tmp_path):
    with store.session(db_path, "doctor") as s:
        assert _mlflow(reconcile(s, tmp_path / "published", *tracking)) == [("ok", "no champion yet")]


def test_a_full_disk_while_logging_is_one_broken_line_not_a_traceback(db_path, tracking, tmp_path, monkeypatch):
    save_toy_champion(db_path)
    monkeypatch.setenv(DISK_FULL_ENV, "mlflow:artifacts")  # the OSError a full disk gives, at the first artifact
    [(status, detail)] = _mlflow(_reconcile(db_path, tmp_path, tracking))
    assert status == "broken" and detail.startswith("no space left on the device of ")
    assert detail.endswith("(`uniroute doctor` logs what is missing)")


def test_a_full_disk_names_the_artifact_location_mlflow_was_writing(db_path, tracking, tmp_path, monkeypatch):
    save_toy_champion(db_path)
    monkeypatch.setenv(DISK_FULL_ENV, "mlflow:artifacts")
    [(_, detail)] = _mlflow(_reconcile(db_path, tmp_path, tracking))
    named = detail.removeprefix("no space left on the device of ").split(" (")[0]
    assert named != str(tracking[1]) and "artifacts" in named, detail  # the run's folder, not just the root


def test_an_oserror_other_than_a_full_disk_while_logging_is_raised_not_reported(db_path, tracking, tmp_path):
    save_toy_champion(db_path)
    tracking[1].parent.mkdir(parents=True, exist_ok=True)
    tracking[1].write_text("a file where MLflow's artifact folder goes")
    with pytest.raises(OSError) as raised:
        _reconcile(db_path, tmp_path, tracking)
    assert not is_disk_full(raised.value)
