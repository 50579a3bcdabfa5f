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

from uniroute import store
from uniroute.ingest import process_inbox

WRITER = textwrap.dedent("""
    import sys, uuid
    from uniroute.pipeline.serving.spool import DecisionSpool
    spool = DecisionSpool(sys.argv[1], max_bytes=4000, max_seconds=3600)
    n = 0
    while True:  # a server answering requests until it is killed
        spool.write([{"record": "uniroute.decision", "schema_version": 1, "decision_id": uuid.uuid4().hex,
                      "decided_at": "2026-11-25T10:00:00", "source": "pyfunc", "router_id": "r1",
                      "text_hash": "h%d" % (n + i), "model": "m1", "lam": 0.0, "propensity": 1.0}
                     for i in range(7)])
        n += 7
""")


def _record(i: int) -> str:
    return json.dumps({"record": "uniroute.decision", "schema_version": 1, "decision_id": f"d{i}",
                       "decided_at": "2026-11-25T10:00:00", "source": "cli", "router_id": "r1", "text_hash": "h",
                       "model": "m1", "lam": 0.0, "propensity": 1.0}, separators=(",", ":"))


def _count(db_path: Path) -> int:
    with store.opened(db_path, read_only=True) as con:
        return con.execute("select count(*) from routing_decisions").fetchone()[0]


def test_a_killed_writer_loses_only_its_unfinished_file(db_path, tmp_path):
    spool = tmp_path / "spool"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(spool)], env={**os.environ, "PYTHONPATH": os.getcwd()})
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


def test_a_torn_file_is_refused_whole(db_path, tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "good.jsonl").write_text("".join(_record(i) + "\n" for i in range(3)))
    (spool / "torn.jsonl").write_text("".join(_record(i) + "\n" for i in range(3, 6)) + _record(6)[:50])
    outcomes = {o.name: o for o in process_inbox(db_path, spool, settle_seconds=0.0)}
    assert outcomes["good.jsonl"].status == "ingested" and outcomes["torn.jsonl"].status == "failed"
    assert "line 4 is not JSON" in outcomes["torn.jsonl"].error and "\n" not in outcomes["torn.jsonl"].error
    assert _count(db_path) == 3  # none of the torn file's three whole lines either


def test_a_record_from_a_newer_uniroute_is_refused_in_one_line(db_path, tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "newer.jsonl").write_text(_record(1) + "\n" + _record(2).replace('"schema_version":1',
                                                                               '"schema_version":9') + "\n")
    [outcome] = process_inbox(db_path, spool, settle_seconds=0.0)
    assert outcome.status == "failed" and "line 2 has record schema_version 9" in outcome.error
    assert _count(db_path) == 0
