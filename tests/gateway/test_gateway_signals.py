"""A gateway stopped by SIGTERM or SIGINT finishes its spool file: the next inbox loads every decision it recorded.
uvicorn stops gracefully on either, then raises SIGTERM again with the handler it found, which ended the process
before the gateway's `finally` (and atexit) ran: its last file stayed `.part`, never loaded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests import needs

needs.installed("litellm")

from tests.gateway.backends import free_port  # noqa: E402
from tests.gateway.harness import KEY, KEY_VAR  # noqa: E402
from uniroute import store  # noqa: E402
from uniroute.ingest import process_inbox  # noqa: E402

START_SECONDS = 120  # a bound for a contended machine, not a timing assertion
ROOT = Path(__file__).resolve().parents[2]


def _ask(port: int, text: str) -> str:
    body = {"model": "uniroute/lambda-0", "messages": [{"role": "user", "content": text}]}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.headers["x-uniroute-decision-id"])


def _started(server: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        assert server.poll() is None, f"the gateway exited: {log.read_text()[-3000:]}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5):
                return
        except OSError:
            assert time.monotonic() < deadline, f"no answer in {START_SECONDS} s: {log.read_text()[-3000:]}"
            time.sleep(0.3)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_gateway_finishes_its_spool_file_and_the_inbox_loads_it(tmp_path: Path, stop: signal.Signals):
    home, port, log = tmp_path / "home", free_port(), tmp_path / "gateway.log"
    env = {**os.environ, KEY_VAR: KEY, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "tests.gateway.serve_process", str(home), str(port)],
                                  cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        _started(server, port, log)
        ids = [_ask(port, text) for text in ("an easy question", "a hard question")]
        spool = home / "spool" / "decisions"
        assert [p.name.endswith(".part") for p in spool.iterdir()] == [True]  # open for an hour: not finished yet
        server.send_signal(stop)
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert not list(spool.glob("*.part")), log.read_text()[-3000:]
    [outcome] = process_inbox(home / "uniroute.duckdb", spool, settle_seconds=0.0)
    assert outcome.status == "ingested", outcome.error
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        landed = [row[0] for row in con.execute("select decision_id from routing_decisions").fetchall()]
    assert sorted(landed) == sorted(ids)
