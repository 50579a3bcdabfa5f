"""The inbox trusts nothing it finds: links, folders and pipes are refused unread, files still being written wait,
and a reason quotes nothing from outside the inbox."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from tests.ingest.files import LONG_HEADER, snapshot, write
from uniroute.ingest import process_inbox

SETTLE = 0.3


def _reason(inbox: Path, name: str) -> str:
    return (inbox / "failed" / f"{name}.reason.txt").read_text()


def test_a_link_to_a_file_outside_is_refused_unread(db_path, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    secret = write(tmp_path / "outside" / "secret.csv", LONG_HEADER + "p1,the secret text,m1,1,0.5\n")
    os.symlink("/etc/passwd", inbox / "passwd.csv")
    os.symlink(secret, inbox / "secret.csv")
    outcomes = process_inbox(db_path, inbox, settle_seconds=SETTLE)
    assert [(o.name, o.status) for o in outcomes] == [("passwd.csv", "failed"), ("secret.csv", "failed")]
    for name in ("passwd.csv", "secret.csv"):
        reason = _reason(inbox, name)
        assert reason.startswith("a symbolic link; the inbox takes regular files only")
        assert "root:" not in reason and "secret text" not in reason and "/etc" not in reason
        assert (inbox / "failed" / name).is_symlink()  # the link itself moved, its target untouched
    assert secret.read_text().startswith(LONG_HEADER)
    assert not db_path.exists() or not snapshot(db_path)["results"]


def test_a_symlink_loop_a_folder_and_a_pipe_are_refused(db_path, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    os.symlink(inbox / "loop.csv", inbox / "loop.csv")
    (inbox / "folder.csv").mkdir()
    os.mkfifo(inbox / "pipe.csv")  # opening it would block forever: it must never be opened
    outcomes = {o.name: o for o in process_inbox(db_path, inbox, settle_seconds=SETTLE)}
    assert {name: o.status for name, o in outcomes.items()} == {
        "folder.csv": "failed", "loop.csv": "failed", "pipe.csv": "failed"}
    assert "a symbolic link" in _reason(inbox, "loop.csv")
    assert "a directory" in _reason(inbox, "folder.csv")
    assert "not a regular file" in _reason(inbox, "pipe.csv")


def test_a_file_still_being_written_waits_and_is_then_ingested_whole(db_path, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    path = inbox / "slow.csv"
    path.write_text(LONG_HEADER)
    rows = [f"p{i},prompt number {i},m1,1,0.5\n" for i in range(150)]

    def writer() -> None:  # a copy in place that trickles in: 30 writes over about 1.5 s
        with open(path, "a") as handle:
            for start in range(0, 150, 5):
                handle.write("".join(rows[start:start + 5]))
                handle.flush()
                time.sleep(0.05)

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.1)
    early = process_inbox(db_path, inbox, settle_seconds=SETTLE)
    thread.join()
    assert early == []  # seen changing: left for the next run, nothing ingested, nothing moved
    assert path.exists()
    done = process_inbox(db_path, inbox, settle_seconds=SETTLE)
    assert [(o.name, o.status) for o in done] == [("slow.csv", "ingested")]
    assert done[0].summary.rows_accepted == 150


def test_partial_names_wait_for_their_rename(db_path, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    part = write(inbox / "late.csv.part", LONG_HEADER + "p1,Q,m1,1,0.5\n")
    assert process_inbox(db_path, inbox, settle_seconds=SETTLE) == []
    part.rename(inbox / "late.csv")
    outcomes = process_inbox(db_path, inbox, settle_seconds=SETTLE)
    assert [(o.name, o.status) for o in outcomes] == [("late.csv", "ingested")]
    assert sorted(p.name for p in inbox.iterdir() if p.name != ".inbox.lock") == ["done"]
