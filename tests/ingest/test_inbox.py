"""Ingestion: formats by content, one transaction per file, quarantine with reasons, merges, the inbox."""

from __future__ import annotations

import logging
from pathlib import Path

from tests.ingest.files import long_csv, write
from uniroute.ingest import process_inbox


def test_process_inbox_moves_files_to_done_and_failed(db_path, tmp_path):
    inbox = tmp_path / "inbox"
    write(inbox / "a.csv", "prompt_id,prompt,model,score,cost,split\np1,Q,m1,1,,val\np2,R,m2,1,,train\n")
    write(inbox / "b.csv", "prompt_id,prompt,model\np1,Q,m1\n")
    write(inbox / "c.csv.part", long_csv("p3,Q,m1,1,"))  # still being written
    write(inbox / "done" / "a.csv", "an older file of the same name")
    outcomes = process_inbox(db_path, inbox, settle_seconds=0.05)
    assert [(o.name, o.status) for o in outcomes] == [("a.csv", "ingested"), ("b.csv", "failed")]
    assert outcomes[0].landed_models == ("m1",)
    assert Path(outcomes[0].moved_to) == inbox / "done" / "a.1.csv"
    assert (inbox / "done" / "a.csv").read_text() == "an older file of the same name"
    assert "missing required columns ['score', 'cost']" in (inbox / "failed" / "b.csv.reason.txt").read_text()
    assert sorted(p.name for p in inbox.iterdir() if p.name != ".inbox.lock") == ["c.csv.part", "done", "failed"]
    assert outcomes[1].as_dict()["error"].endswith("(needs ['prompt_id', 'prompt', 'model', 'score', 'cost'])")
    assert process_inbox(db_path, inbox, settle_seconds=0.05) == []


def test_a_failed_inbox_file_is_reported_by_the_caller_not_warned_twice(db_path, tmp_path, caplog):
    # the command line and the flow each report the outcome; a library warning printed it a second time
    write(tmp_path / "inbox" / "b.csv", "prompt_id,prompt,model\np1,Q,m1\n")
    with caplog.at_level(logging.INFO, logger="uniroute.ingest.inbox"):
        [outcome] = process_inbox(db_path, tmp_path / "inbox", settle_seconds=0.05)
    assert outcome.status == "failed"
    assert [r.levelno for r in caplog.records if "b.csv" in r.getMessage()] == [logging.INFO]


# ---------------------------------------------------------------------------------------------- bad input


def test_a_file_with_no_accepted_row_goes_to_failed_with_its_reason(db_path, tmp_path):
    inbox = tmp_path / "inbox"
    write(inbox / "bad.csv", long_csv("q1,Q,m9,1.5,0.1", "q2,R,m9,-1,0.1"))  # every score outside [0, 1]
    outcomes = process_inbox(db_path, inbox, settle_seconds=0.05)
    assert [(o.name, o.status) for o in outcomes] == [("bad.csv", "failed")]
    reason = (inbox / "failed" / "bad.csv.reason.txt").read_text()
    assert "no row accepted: 2 rows quarantined" in reason and "score 1.5 is outside [0, 1]" in reason
    assert not (inbox / "done").exists() or not any((inbox / "done").iterdir())


def test_a_second_inbox_run_leaves_the_files_to_the_running_one(db_path, tmp_path):
    import fcntl
    import os

    inbox = tmp_path / "inbox"
    write(inbox / "a.csv", long_csv("q1,Q,m9,1,0.1"))
    held = os.open(inbox / ".inbox.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX)  # a run in another process holds the inbox
    try:
        assert process_inbox(db_path, inbox, settle_seconds=0.05) == []  # no crash, nothing claimed
        assert (inbox / "a.csv").exists()
    finally:
        os.close(held)
    assert [o.status for o in process_inbox(db_path, inbox, settle_seconds=0.05)] == ["ingested"]
