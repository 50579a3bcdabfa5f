"""The inbox's parts, checked directly on real folders: what it lists, what it refuses unread, when a copied file
has settled, how a clash of names is numbered, which folders it insists on, and its JSON outcome. Added where
the mutation run (make mutation) found them untested by the end-to-end inbox tests."""

from __future__ import annotations

import inspect
import os
import threading
import time
from pathlib import Path

import pytest

from tests.ingest.files import rows, write
from uniroute.ingest import inbox
from uniroute.ingest.inbox import (
    SETTLE_SECONDS,
    InboxOutcome,
    _check_folders,
    _moved,
    _not_a_regular_file,
    _settled,
    inbox_files,
)
from uniroute.ingest.load import IngestSummary
from uniroute.ingest.staging import IngestError


def test_a_copied_file_settles_after_two_seconds():
    # docs/cli.md and docs/settings.md tell writers that copy in place: a file is taken once it has stood still for 2 s.
    assert inbox.SETTLE_SECONDS == SETTLE_SECONDS == 2.0
    assert inspect.signature(inbox.process_inbox).parameters["settle_seconds"].default == 2.0


def test_a_file_younger_than_the_settle_time_waits_only_the_rest_of_it(tmp_path: Path):
    path = tmp_path / "young.csv"
    path.write_text("x")
    os.utime(path, (time.time() - 59, time.time() - 59))
    started = time.monotonic()
    assert _settled(path, 60.0)
    # about 1 s, the 60 s less the 59 it has already stood still; far below a full wait even on a loaded machine
    assert 0.9 <= time.monotonic() - started < 30.0


def test_the_inbox_lists_its_waiting_entries_by_name_and_nothing_else(tmp_path: Path):
    for name in ("b.csv", "a.jsonl", ".hidden.csv", "c.csv.part", "d.partial", "e.tmp", "f.crdownload"):
        (tmp_path / name).write_text("x")
    for folder in ("done", "failed", ".processing", "sub"):
        (tmp_path / folder).mkdir()
    assert [p.name for p in inbox_files(tmp_path)] == ["a.jsonl", "b.csv", "sub"]


def test_only_a_regular_file_is_taken(tmp_path: Path):
    (tmp_path / "file.csv").write_text("x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "link.csv").symlink_to(tmp_path / "file.csv")
    os.mkfifo(tmp_path / "pipe.csv")
    assert _not_a_regular_file(tmp_path / "file.csv") is None
    assert _not_a_regular_file(tmp_path / "link.csv").startswith("a symbolic link")
    assert _not_a_regular_file(tmp_path / "folder").startswith("a directory")
    assert _not_a_regular_file(tmp_path / "pipe.csv").startswith("not a regular file")


def test_an_old_file_has_settled_without_waiting(tmp_path: Path):
    path = tmp_path / "old.csv"
    path.write_text("x")
    os.utime(path, (time.time() - 60, time.time() - 60))
    started = time.monotonic()
    assert _settled(path, 30.0)
    assert time.monotonic() - started < 1.0


def test_a_fresh_file_that_stands_still_settles_and_one_written_meanwhile_does_not(tmp_path: Path):
    still = tmp_path / "still.csv"
    still.write_text("x")
    assert _settled(still, 0.3)
    growing = tmp_path / "growing.csv"
    growing.write_text("x")
    writer = threading.Timer(0.3, lambda: growing.write_text("x, and more"))
    writer.start()
    assert not _settled(growing, 5.0)  # the write lands 0.3 s in: well inside the wait even on a loaded machine
    writer.join()


def test_a_clash_of_names_is_numbered_before_the_suffix(tmp_path: Path):
    target = tmp_path / "failed"
    first = tmp_path / "x.csv"
    first.write_text("1")
    assert _moved(first, target).name == "x.csv"
    for expected, content in (("x.1.csv", "2"), ("x.2.csv", "3")):
        again = tmp_path / "x.csv"
        again.write_text(content)
        assert _moved(again, target).name == expected
    assert sorted(p.read_text() for p in target.iterdir()) == ["1", "2", "3"]
    renamed = tmp_path / "y.csv"
    renamed.write_text("4")
    assert _moved(renamed, target, "x.csv").name == "x.3.csv"


def test_a_dangling_link_in_the_target_is_not_overwritten(tmp_path: Path):
    target = tmp_path / "done"
    target.mkdir()
    (target / "x.csv").symlink_to(tmp_path / "nowhere")
    source = tmp_path / "x.csv"
    source.write_text("x")
    assert _moved(source, target).name == "x.1.csv"
    assert (target / "x.csv").is_symlink()


@pytest.mark.parametrize("folder", ["done", "failed", ".processing"])
def test_an_inbox_folder_that_is_a_file_or_a_link_is_an_error(tmp_path: Path, folder: str):
    _check_folders(tmp_path)  # none yet: fine
    (tmp_path / folder).write_text("x")
    with pytest.raises(IngestError, match=f"{folder} is not a folder"):
        _check_folders(tmp_path)
    (tmp_path / folder).unlink()
    (tmp_path / "real").mkdir()
    (tmp_path / folder).symlink_to(tmp_path / "real")
    with pytest.raises(IngestError, match=f"{folder} is a symbolic link"):
        _check_folders(tmp_path)
    (tmp_path / folder).unlink()
    (tmp_path / folder).mkdir()
    _check_folders(tmp_path)


def test_an_outcome_as_json_names_its_landed_models():
    summary = IngestSummary("x.csv", "h", "csv", "ingested", rows_accepted=3, landed_models=("m1", "m2"))
    done = InboxOutcome("x.csv", "ingested", "done/x.csv", summary, None)
    assert done.landed_models == ("m1", "m2")
    assert done.as_dict() == {"name": "x.csv", "status": "ingested", "moved_to": "done/x.csv", "error": None,
                              "landed_models": ["m1", "m2"], "summary": summary.as_dict()}
    failed = InboxOutcome("y.csv", "failed", "failed/y.csv", None, "bad")
    assert failed.landed_models == () and failed.as_dict()["summary"] is None
    assert failed.as_dict()["landed_models"] == []


def test_a_run_makes_a_missing_inbox_and_its_lock_and_takes_a_leftover_processing_folder(db_path: Path,
                                                                                          tmp_path: Path):
    inbox_dir = tmp_path / "deep" / "inbox"
    assert inbox.process_inbox(db_path, inbox_dir, settle_seconds=0.0) == []
    assert inbox_dir.is_dir()
    assert (inbox_dir / ".inbox.lock").stat().st_mode & 0o777 == 0o644 & ~_umask()
    (inbox_dir / ".processing").mkdir()  # an empty one, left by a run killed before it claimed anything
    assert inbox.process_inbox(db_path, inbox_dir, settle_seconds=0.0) == []


def test_a_run_refuses_an_inbox_whose_failed_folder_is_a_file(db_path: Path, tmp_path: Path):
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "failed").write_text("x")
    with pytest.raises(IngestError, match="failed is not a folder"):
        inbox.process_inbox(db_path, tmp_path / "inbox", settle_seconds=0.0)


def test_a_link_left_in_processing_goes_to_failed_unread(db_path: Path, tmp_path: Path):
    inbox_dir = tmp_path / "inbox"
    (inbox_dir / ".processing").mkdir(parents=True)
    (inbox_dir / ".processing" / "x.csv").symlink_to(tmp_path / "elsewhere.csv")
    [outcome] = inbox.process_inbox(db_path, inbox_dir, settle_seconds=0.0)
    assert outcome.status == "failed" and outcome.error.startswith("a symbolic link")
    assert (inbox_dir / "failed" / "x.csv").is_symlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_an_ingested_inbox_file_is_recorded_with_its_summary_line(db_path: Path, tmp_path: Path):
    write(tmp_path / "inbox" / "a.csv", "prompt_id,prompt,model,score,cost,split\np1,Q,m1,1,1,val\n")
    [outcome] = inbox.process_inbox(db_path, tmp_path / "inbox", settle_seconds=0.0)
    assert outcome.status == "ingested"
    [(detail,)] = rows(db_path, "select detail from operation_events where kind = 'ingest' and event = 'succeeded'")
    assert detail == outcome.summary.line()
    [(inputs,)] = rows(db_path, "select inputs from operation_events where kind = 'ingest' and event = 'started'")
    assert inputs == "inbox/a.csv"
