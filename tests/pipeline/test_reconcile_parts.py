"""Reconciliation's checks one by one on a real store with a saved champion (no build, no MLflow): what each
finds and repairs in published/, the inbox and the spill folders. Added where the mutation run (make mutation)
found reconcile untested by fast tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from uniroute import store
from uniroute.pipeline.reconcile import Finding, Report, reconcile
from uniroute.pipeline.serving import snapshot

from .toy_store import publish_in_session, save_toy_champion


@pytest.fixture
def saved(db_path: Path) -> Path:
    return save_toy_champion(db_path)


def _reconcile(db_path: Path, published: Path, repair: bool = True, **dirs) -> Report:
    with store.session(db_path, "doctor") as s:
        return reconcile(s, published, None, None, repair=repair, **dirs)


def _found(report: Report) -> dict[str, tuple[str, str]]:
    return {f.check: (f.status, f.detail) for f in report.findings}


def test_a_healthy_store_with_nothing_published_is_all_ok(saved: Path, tmp_path: Path):
    report = _reconcile(saved, tmp_path / "published")
    assert _found(report) == {
        "operations": ("ok", "no run was left unfinished"),
        "pool": ("ok", "every active model is routed by champion r-001"),
        "published": ("ok", "nothing published yet"),
        "files": ("ok", "no stray snapshot folders"),
        "spill": ("ok", "no spill file left by a killed writer beside the store"),
    }
    assert report.healthy and report.repaired == []


def test_a_finding_is_one_aligned_line_and_a_broken_one_makes_the_report_unhealthy():
    report = Report()
    report.add("pool", "ok", "fine")
    report.add("files", "repaired", "removed 1")
    assert report.lines() == ["ok       pool: fine", "repaired files: removed 1"]
    assert report.healthy and report.repaired == [Finding("files", "repaired", "removed 1")]
    report.add("inbox", "broken", "2 files")
    assert not report.healthy


def test_current_behind_the_newest_publication_is_repaired_or_reported(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    first = publish_in_session(saved, published)
    snapshot.make_current(published, first.version)
    assert _found(_reconcile(saved, published))["published"] == (
        "ok", f"`current` is the newest publication {first.version}")
    second = publish_in_session(saved, published, force=True)  # recorded; current still at the first
    assert _found(_reconcile(saved, published, repair=False))["published"] == (
        "broken", f"`current` is {first.version}, the newest publication is {second.version}")
    assert snapshot.current_version(published) == first.version
    report = _reconcile(saved, published)
    assert _found(report)["published"] == ("repaired", f"`current` pointed at {first.version}; now at the newest "
                                           f"publication {second.version}")
    assert snapshot.current_version(published) == second.version and report.repaired


def test_a_damaged_newest_publication_is_broken(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    result = publish_in_session(saved, published)
    (result.path / "routes.parquet").write_bytes(b"not parquet")
    status, detail = _found(_reconcile(saved, published, repair=False))["published"]
    assert status == "broken" and detail.startswith(f"the newest publication {result.version} is damaged")


def test_current_naming_an_unrecorded_version_is_broken(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    (published / "v-unknown").mkdir(parents=True)
    os.symlink("v-unknown", published / "current")
    found = _found(_reconcile(saved, published, repair=False))
    assert found["published"] == ("broken", "`current` names v-unknown, which the store does not record")


def test_a_current_that_is_a_folder_is_broken_and_left_alone(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    (published / "current").mkdir(parents=True)
    report = _reconcile(saved, published)
    assert _found(report)["published"][0] == "broken" and "files" not in _found(report)
    assert (published / "current").is_dir()


def test_stray_folders_are_removed_or_reported_naming_five(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    publish_in_session(saved, published)
    strays = [f"stray-{i}" for i in range(6)]
    for name in strays:
        (published / name).mkdir()
    status, detail = _found(_reconcile(saved, published, repair=False))["files"]
    assert (status, detail) == ("broken", f"6 stray snapshot entries: {', '.join(strays[:5])}")
    status, detail = _found(_reconcile(saved, published))["files"]
    assert (status, detail) == ("repaired", f"removed 6 stray snapshot entries: {', '.join(strays[:5])} ...")
    assert not any((published / name).exists() for name in strays)
    (published / "stray-x").mkdir()
    assert _found(_reconcile(saved, published))["files"] == ("repaired", "removed 1 stray snapshot entries: stray-x")


def test_files_claimed_by_an_interrupted_inbox_run_are_reported(saved: Path, tmp_path: Path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    assert _found(_reconcile(saved, tmp_path / "published", inbox_dir=inbox))["inbox"] == (
        "ok", "no file left half-processed")
    (inbox / ".processing").mkdir()
    (inbox / ".processing" / "a.csv").write_text("x")
    status, detail = _found(_reconcile(saved, tmp_path / "published", inbox_dir=inbox))["inbox"]
    assert status == "broken" and detail.startswith("1 file(s) claimed by an interrupted inbox run (a.csv)")


def test_spill_folders_of_killed_sql_runs_are_removed_or_reported(saved: Path, tmp_path: Path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    assert _found(_reconcile(saved, tmp_path / "published", tmp_dir=tmp))["tmp"][0] == "ok"
    dead = tmp / "sql-999999999"  # no process has this pid
    dead.mkdir()
    status, detail = _found(_reconcile(saved, tmp_path / "published", repair=False, tmp_dir=tmp))["tmp"]
    assert status == "broken" and "1 spill folder(s)" in detail and "sql-999999999" in detail and dead.exists()
    status, detail = _found(_reconcile(saved, tmp_path / "published", tmp_dir=tmp))["tmp"]
    assert (status, detail) == ("repaired", "removed 1 spill folder(s) of killed `uniroute sql` runs: sql-999999999")
    assert not dead.exists()


def test_duckdb_spill_files_of_a_killed_writer_beside_the_store_are_removed_or_reported(saved: Path, tmp_path: Path):
    folder = Path(f"{saved}.tmp")  # DuckDB's default temp directory for the store
    folder.mkdir()
    dead = [folder / "duckdb_temp_999999999_0_storage_DEFAULT-0.tmp", folder / "duckdb_temp_999999999_0_owner"]
    alive = folder / f"duckdb_temp_{os.getpid()}_0_storage_DEFAULT-0.tmp"  # a running writer's: kept
    other = folder / "notes.txt"  # not DuckDB's: kept
    for path in (*dead, alive, other):
        path.write_bytes(b"x" * 525_000)
    status, detail = _found(_reconcile(saved, tmp_path / "published", repair=False))["spill"]
    # The dead writer's two files only, in MB of the disk they take (allocated blocks: spill files are sparse).
    mb = sum(path.stat().st_blocks * 512 for path in dead) / 1e6
    assert status == "broken" and detail.startswith(f"2 spill file(s), {mb:,.1f} MB ") and str(folder) in detail
    assert all(path.exists() for path in dead)
    status, detail = _found(_reconcile(saved, tmp_path / "published"))["spill"]
    assert status == "repaired" and detail.startswith("removed 2 spill file(s)")
    assert not any(path.exists() for path in dead) and alive.exists() and other.exists()
    alive.unlink()
    other.unlink()
    (folder / "duckdb_temp_999999998_0_owner").write_text("x")
    assert _found(_reconcile(saved, tmp_path / "published"))["spill"][0] == "repaired"
    assert not folder.exists()  # emptied: removed, the home looks as before
    assert _found(_reconcile(saved, tmp_path / "published"))["spill"][0] == "ok"


def test_lists_name_five_entries_and_mark_only_a_sixth_with_dots(saved: Path, tmp_path: Path):
    published, inbox, tmp = tmp_path / "published", tmp_path / "inbox", tmp_path / "tmp"
    publish_in_session(saved, published)
    (inbox / ".processing").mkdir(parents=True)
    tmp.mkdir()
    strays = [f"stray-{i}" for i in range(5)]
    spills = [f"sql-99999999{i}" for i in range(5)]  # no process has these pids
    claimed = [f"f{i}.csv" for i in range(6)]
    for name in strays:
        (published / name).mkdir()
    for name in spills:
        (tmp / name).mkdir()
    for name in claimed:
        (inbox / ".processing" / name).write_text("x")
    found = _found(_reconcile(saved, published, repair=False, inbox_dir=inbox, tmp_dir=tmp))
    assert found["files"] == ("broken", f"5 stray snapshot entries: {', '.join(strays)}")
    assert found["inbox"] == ("broken", f"6 file(s) claimed by an interrupted inbox run ({', '.join(claimed[:5])}); "
                              "`uniroute inbox` finishes them")
    assert found["tmp"] == ("broken", f"5 spill folder(s) of killed `uniroute sql` runs in {tmp}: {', '.join(spills)} "
                            "(`uniroute doctor` or the next `uniroute sql` removes them)")
    (tmp / "sql-999999995").mkdir()
    found = _found(_reconcile(saved, published, inbox_dir=inbox, tmp_dir=tmp))
    assert found["files"] == ("repaired", f"removed 5 stray snapshot entries: {', '.join(strays)}")
    assert found["tmp"] == ("repaired", f"removed 6 spill folder(s) of killed `uniroute sql` runs: "
                            f"{', '.join(spills)} ...")


def test_doctor_publishes_the_champion_again_over_a_damaged_newest_publication(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    damaged = publish_in_session(saved, published)
    snapshot.make_current(published, damaged.version)
    (damaged.path / "routes.parquet").write_bytes(b"not parquet")
    report = _reconcile(saved, published)
    status, detail = _found(report)["published"]
    again = snapshot.current_version(published)  # switched once the session committed
    assert again != damaged.version and snapshot.read_snapshot(published / again) is not None
    assert status == "repaired" and detail.startswith(f"the newest publication {damaged.version} was damaged (")
    assert detail.endswith(f"): published the champion again as {again}, current once this run commits")
    assert (published / damaged.version).is_dir()  # kept, recorded, for a look
    assert _found(_reconcile(saved, published, repair=False))["published"] == (
        "ok", f"`current` is the newest publication {again}")


def test_a_republish_that_fails_is_one_broken_line_and_leaves_the_store_and_current_as_they_were(
        saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    damaged = publish_in_session(saved, published)
    snapshot.make_current(published, damaged.version)
    (damaged.path / "routes.parquet").write_bytes(b"not parquet")
    with store.session(saved, "test") as s:  # the champion's whole pool retired: publishing it again must fail
        for model in ("cheap", "big"):
            store.execute(s.con, "retire_model", model=model)
    entries = sorted(p.name for p in published.iterdir())
    report = _reconcile(saved, published)
    status, detail = _found(report)["published"]
    assert status == "broken" and not report.healthy and "\n" not in detail
    assert detail.startswith(f"the newest publication {damaged.version} is damaged: ")
    assert detail.endswith("; publishing it again failed: champion r-001 has no active model to publish "
                           "(all retired)")
    assert sorted(p.name for p in published.iterdir()) == entries  # no new folder, `current` not switched
    assert snapshot.current_version(published) == damaged.version
    with store.session(saved, "test") as s:
        assert store.query(s.con, "publication_versions").version.tolist() == [damaged.version]
