"""The gateway under concurrent traffic while a backend is killed mid-run: no request fails, the killed model
answers nothing after its death, and every request it would have taken shows its fall-back in the record. The
full-size run (1,000 requests at 32, each server its own process) is benchmarks/speed/gateway_failover.py."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests import needs

needs.installed("litellm")
openai = needs.module("openai")

from tests.gateway.harness import KEY_VAR, start  # noqa: E402
from uniroute import operations, store  # noqa: E402

REQUESTS = 80
CONCURRENCY = 8
KILL_AFTER = 20


def test_no_request_fails_while_a_backend_is_killed_mid_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VAR, "sk-load-test-key")
    running = start(tmp_path / "home", latency=0.05)
    client = openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0, timeout=30)
    done, lock, killed = [0], threading.Lock(), threading.Event()
    calls_at_kill = [0]

    def one(i: int) -> tuple[str, str]:
        raw = client.chat.completions.with_raw_response.create(
            model="uniroute/lambda-0", messages=[{"role": "user", "content": f"{'hard' if i % 2 else 'easy'} {i}"}])
        with lock:
            done[0] += 1
            if done[0] == KILL_AFTER and not killed.is_set():
                killed.set()
                running.backends["big"].kill()
                calls_at_kill[0] = running.backends["big"].calls
        return raw.headers["x-uniroute-decision-id"], raw.parse().model

    try:
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            answers = list(pool.map(one, range(REQUESTS)))  # any failed request raises here
        assert killed.is_set() and running.backends["big"].calls == calls_at_kill[0]
        running.gateway.spool.close()
        records = {json.loads(line)["decision_id"]: json.loads(line)
                   for f in (running.home / "spool" / "decisions").glob("*.jsonl")
                   for line in f.read_text().splitlines()}
        assert set(records) == {d for d, _ in answers}
        for decision_id, model in answers:
            record = records[decision_id]
            assert record["answered_by"] == model
            if record["model"] == "big" and model != "big":  # big's requests after the kill fell back
                assert record["attempts"][0]["model"] == "big" and record["attempts"][0]["error"]
                assert record["attempts"][-1]["model"] == "cheap" and record["attempts"][-1]["error"] is None
        assert sum(1 for _, m in answers if m == "cheap") > REQUESTS // 2  # the hard half after the kill too
        run = operations.inbox(running.context(), onboard_landed=False)
        assert not run.failed
        con = store.open_read_only(running.db_path)
        try:
            assert con.execute("select count(*), count(distinct decision_id) from decisions").fetchone() == \
                (REQUESTS, REQUESTS)
        finally:
            con.close()
    finally:
        running.stop()
