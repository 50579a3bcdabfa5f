"""The inbox never overwrites: bad files that share a name each keep their own copy in failed/ with their own
reason, whether they arrive in one run (a link and a file) or in two (a file dropped again after it failed)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.ingest.files import write
from uniroute.ingest import process_inbox


def _failed(inbox: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((inbox / "failed").iterdir())}


def test_two_bad_files_with_one_name_in_two_runs_are_both_kept_with_their_reasons(db_path, tmp_path):
    inbox = tmp_path / "inbox"
    first = "prompt_id,prompt,model\np1,Q,m1\n"  # missing columns
    second = "prompt_id,prompt,model,score\np2,R,m2,1\n"  # another file, missing another column
    write(inbox / "b.csv", first)
    [one] = process_inbox(db_path, inbox, settle_seconds=0.0)
    write(inbox / "b.csv", second)
    [two] = process_inbox(db_path, inbox, settle_seconds=0.0)
    assert (one.status, two.status) == ("failed", "failed"), (one, two)
    assert Path(one.moved_to) != Path(two.moved_to)
    failed = _failed(inbox)
    assert len(failed) == 4, sorted(failed)  # two files, two reasons
    assert Path(one.moved_to).read_text() == first and Path(two.moved_to).read_text() == second
    reason_one = Path(one.moved_to + ".reason.txt").read_text()
    reason_two = Path(two.moved_to + ".reason.txt").read_text()
    assert "missing required columns" in reason_one and reason_one.strip() == one.error
    assert reason_two.strip() == two.error and reason_two != reason_one
    assert sorted(p.name for p in inbox.iterdir() if p.name != ".inbox.lock") == ["failed"]


def test_a_link_and_a_file_of_one_name_in_one_run_are_both_kept(db_path, tmp_path):
    inbox = tmp_path / "inbox"
    outside = write(tmp_path / "outside.csv", "prompt_id,prompt,model,score,cost\np1,Q,m1,1,0.1\n")
    write(inbox / "failed" / "x.csv", "an earlier failure")
    write(inbox / "failed" / "x.csv.reason.txt", "its reason\n")
    os.symlink(outside, inbox / "x.csv")
    [outcome] = process_inbox(db_path, inbox, settle_seconds=0.0)
    assert outcome.status == "failed" and "symbolic link" in outcome.error
    assert (inbox / "failed" / "x.csv").read_text() == "an earlier failure"
    assert (inbox / "failed" / "x.csv.reason.txt").read_text() == "its reason\n"
    moved = Path(outcome.moved_to)
    assert moved.parent == inbox / "failed" and moved.name != "x.csv" and moved.is_symlink()
    assert "symbolic link" in Path(outcome.moved_to + ".reason.txt").read_text()
