"""The spool: a serving process killed mid-write loses at most its unfinished `.part`, and the inbox never lands
half a file (a finished file is taken whole or refused whole)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from uniroute import store
from uniroute.ingest import process_inbox

WRITER = textwrap.dedent("""
    import json, sys, uuid
    from uniroute.pipeline.serving.spool import DecisionSpool
    spool = DecisionSpool(sys.argv[1], max_bytes=4000, max_seconds=3600)
    template = json.loads(sys.argv[2])
    while True:  # a server answering requests until it is killed
        spool.write([{**template, "decision_id": uuid.uuid4().hex} for i in range(7)])
""")


@pytest.fixture
def db_path(traffic_home) -> Path:
    """The served home's store: records refer to its router, models and embedder."""
    return traffic_home / "uniroute.duckdb"


@pytest.fixture
def record(real_record):
    """A line of a decision record numbered i (a real record of the served champion, under id d<i>)."""
    return lambda i: json.dumps({**real_record, "decision_id": f"d{i}"}, separators=(",", ":"))


def _count(db_path: Path) -> int:
    with store.opened(db_path, read_only=True) as con:
        return con.execute("select count(*) from routing_decisions").fetchone()[0]


def test_a_killed_writer_loses_only_its_unfinished_file(db_path, tmp_path, real_record):
    spool = tmp_path / "spool"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(spool), json.dumps(real_record)],
                              env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        deadline = time.monotonic() + 60
        # killed while a file is half written (three finished before it)
        while (len(list(spool.glob("*.jsonl"))) < 3 or not list(spool.glob("*.part"))) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    finished = sorted(spool.glob("*.jsonl"))
    partial = list(spool.glob("*.jsonl.part"))
    assert len(finished) >= 3 and len(partial) <= 1
    lines = sum(len(p.read_text().splitlines()) for p in finished)
    outcomes = process_inbox(db_path, spool, settle_seconds=0.0)
    assert {o.status for o in outcomes} == {"ingested"} and len(outcomes) == len(finished)
    assert _count(db_path) == lines  # every finished record, none of the .part's
    assert all(p.exists() for p in partial)  # left where it was: never taken


def test_a_torn_line_is_quarantined_and_the_whole_lines_load(db_path, tmp_path, record):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "good.jsonl").write_text("".join(record(i) + "\n" for i in range(3)))
    (spool / "torn.jsonl").write_text("".join(record(i) + "\n" for i in range(3, 6)) + record(6)[:50])
    outcomes = {o.name: o for o in process_inbox(db_path, spool, settle_seconds=0.0)}
    assert outcomes["good.jsonl"].status == "ingested" and outcomes["torn.jsonl"].status == "ingested"
    torn = outcomes["torn.jsonl"].summary
    assert (torn.rows_accepted, torn.rows_quarantined) == (3, 1)
    assert "line 4: not JSON" in torn.line() and "\n" not in torn.line()
    assert _count(db_path) == 6  # the torn file's three whole lines too
    with store.opened(db_path, read_only=True) as con:
        assert con.execute("select line_number from decision_quarantine").fetchall() == [(4,)]


def test_a_record_from_a_newer_uniroute_is_refused_in_one_line(db_path, tmp_path, record):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "newer.jsonl").write_text(record(1) + "\n" + record(2).replace('"schema_version":1',
                                                                               '"schema_version":9') + "\n")
    [outcome] = process_inbox(db_path, spool, settle_seconds=0.0)
    assert outcome.status == "failed" and "line 2 has record schema_version 9" in outcome.error
    assert _count(db_path) == 0
