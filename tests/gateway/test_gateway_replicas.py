"""Many replicas: two `uniroute gateway` processes write one spool folder; one `uniroute inbox` then loads every
request's record exactly once, including the records of the files each process finished as it was stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import needs

needs.installed("litellm")
openai = needs.module("openai")

from deployments.backends import Backend  # noqa: E402
from deployments.serve import free_port  # noqa: E402
from tests.gateway.harness import KEY_VAR, gateway_process, portable_home  # noqa: E402
from uniroute import store  # noqa: E402

pytestmark = pytest.mark.slow  # two gateway processes start (an embedder each): half a minute
PER_REPLICA = 12


def test_two_gateway_processes_share_one_spool_and_one_inbox_loads_each_record_once(tmp_path: Path) -> None:
    backends = {name: Backend(name).start() for name in ("cheap", "big")}
    home = portable_home(tmp_path / "home", backends)
    env = {**os.environ, KEY_VAR: "sk-replica-test-key", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    replicas = []
    try:
        replicas = [gateway_process(home, free_port(), env) for _ in range(2)]
        ids = []
        for proc in replicas:
            port = proc.args[proc.args.index("--port") + 1]
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)
            for i in range(PER_REPLICA):
                raw = client.chat.completions.with_raw_response.create(
                    model="uniroute" if i % 3 else "cheap",
                    messages=[{"role": "user", "content": f"{'a hard proof' if i % 2 else 'an easy one'} {i}"}])
                ids.append(raw.headers["x-uniroute-decision-id"])
    finally:
        for proc in replicas:  # as `make stop` stops them: SIGTERM; each finishes its open spool file
            proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(timeout=60) for proc in replicas]
        for backend in backends.values():
            backend.kill()
    assert codes == [0, 0], [proc.stdout.read() for proc in replicas]
    spool = home / "spool" / "decisions"
    files = sorted(spool.glob("*.jsonl"))
    assert not list(spool.glob("*.part")) and len({f.name.split("-")[2] for f in files}) == 2  # one pid each
    assert len(ids) == len(set(ids)) == 2 * PER_REPLICA
    inbox = [sys.executable, "-m", "uniroute", "inbox", "--no-onboard", "--json"]
    for _ in range(2):  # a second inbox finds nothing new
        done = subprocess.run(inbox, env=env | {"UNIROUTE_HOME": str(home)}, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
    assert all(f["status"] == "ingested" for f in json.loads(done.stdout)["files"]) or not json.loads(
        done.stdout)["files"]
    con = store.open_read_only(home / "uniroute.duckdb")
    try:
        loaded = con.execute("select decision_id, setting, answered_by from decisions").fetchall()
    finally:
        con.close()
    assert sorted(row[0] for row in loaded) == sorted(ids)
    assert sum(row[1] == "fixed by caller" for row in loaded) == 2 * len(range(0, PER_REPLICA, 3))
    assert all(row[2] in ("cheap", "big") for row in loaded)
